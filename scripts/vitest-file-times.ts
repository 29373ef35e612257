/**
 * A vitest reporter for `npm test -- --timings` (scripts/test.ts): each test file's seconds from its worker's
 * start to its end (import, hooks and tests; vitest's JSON report counts only the tests), its CPU seconds
 * (the worker's own and its waited-for children's: servers and CLI calls; recorded by tests/setup.ts), and its
 * slowest tests, written as JSON to DM_TEST_FILE_TIMES.
 */
import fs from "node:fs";
import path from "node:path";
import type { Reporter, TestModule } from "vitest/node";

export type FileTime = { file: string; seconds: number; cpuSeconds: number | null; tests: number; slowestTests: { name: string; seconds: number }[] };

export default class FileTimes implements Reporter {
  onTestRunEnd(modules: readonly TestModule[]) {
    const out = process.env.DM_TEST_FILE_TIMES;
    if (!out) return;
    const files: FileTime[] = modules.map((m) => {
      const d = m.diagnostic();
      const tests = [...m.children.allTests()].map((t) => ({ name: t.fullName, seconds: (t.diagnostic()?.duration ?? 0) / 1000 }));
      const cpu = (m.meta() as { cpuSeconds?: number }).cpuSeconds;
      return {
        file: path.relative(process.cwd(), m.moduleId),
        seconds: (d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration) / 1000,
        cpuSeconds: cpu ?? null,
        tests: tests.length,
        slowestTests: tests.sort((a, b) => b.seconds - a.seconds).slice(0, 5),
      };
    });
    fs.writeFileSync(out, JSON.stringify(files.sort((a, b) => b.seconds - a.seconds), null, 1));
  }
}
