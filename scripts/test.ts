/**
 * `npm test`: every suite, as CI runs it, with the seconds each phase took and the total.
 *
 * Two lanes run side by side from the start (a phase's output is held and printed whole when it ends); the
 * phases of one lane run one after another. The production bundle is built once, at the head of the first
 * lane, for every suite that starts `next start` (PostgreSQL, reliability, e2e): a phase that needs it waits
 * for it. The type check does not: it reads its own copy of the route types (scripts/typecheck.ts). One
 * PostgreSQL cluster, started beside the build, serves both PostgreSQL suites (each test file makes its own
 * database in it).
 * Every phase runs even when an earlier one failed, so one run shows every
 * failure; the exit code is 1 when any failed.
 *
 * `npm test -- unit pg` runs only the named phases (with the build and the
 * cluster when they need them); `--serial` runs every phase alone; `--timings` adds
 * each phase's CPU seconds (what it waited for, and every process it started, the
 * cluster's on a row of its own) and its slowest test files (from the runners' JSON reports).
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startTestPostgres, type TestPostgres } from "../tests/pg/harness";
import { ROOT } from "./build-freshness";
import { TreeCpu } from "./tree-cpu";
import { prepareTypecheck } from "./typecheck";
import type { FileTime } from "./vitest-file-times";

type Phase = { name: string; args: string[]; needsBuild?: boolean; needsPostgres?: boolean };

const npm = (script: string): string[] => ["npm", "run", "-s", script];

const BUILD: Phase = { name: "build", args: ["npx", "tsx", "scripts/build-if-stale.ts"] };

/**
 * Two lanes keep 2 cores busy: every suite runs two files (e2e: two specs) at a time, and much of each waits
 * (PostgreSQL, servers starting, timed load, the browser), yet the machine is short of CPU more than of anything
 * else, so a layout gains only where a core would otherwise idle. Each lane starts with its own phases: the build
 * and then the PostgreSQL suite (the longest; its cluster starts beside the build), and beside them lint and the
 * type check, which need no bundle. Then each lane, as it frees, takes the next phase of SHARED, longest first:
 * neither waits idle while the other has work, however long the PostgreSQL suite runs
 * (`npm test -- --timings` shows each phase's seconds and slowest files).
 */
const LANES: Phase[][] = [
  [BUILD, { name: "pg", args: npm("test:pg"), needsBuild: true, needsPostgres: true }],
  [
    { name: "lint", args: npm("lint") },
    // The route types were copied before the build began (prepareTypecheck below): tsc reads no file the build rewrites.
    { name: "typecheck", args: ["npx", "tsx", "scripts/typecheck.ts", "--prepared"] },
  ],
];
const SHARED: Phase[] = [
  { name: "e2e", args: npm("test:e2e"), needsBuild: true },
  // Route handlers are called in-process: no server, no bundle.
  { name: "unit", args: npm("test:unit") },
  { name: "reliability:pg", args: npm("test:reliability:pg"), needsBuild: true, needsPostgres: true },
  { name: "reliability", args: npm("test:reliability"), needsBuild: true },
];

type Result = { name: string; seconds: number; ok: boolean; logFile?: string; cpuSeconds?: number; treeCpuSeconds?: number; report?: string };

/** The runner of a phase's tests, for its JSON report: vitest, Playwright, or none (build, lint, typecheck). */
const runnerOf = (phase: Phase): "vitest" | "playwright" | null =>
  phase.name === "e2e" ? "playwright" : ["unit", "pg", "reliability", "reliability:pg"].includes(phase.name) ? "vitest" : null;

/**
 * With `timings`, the phase runs under /usr/bin/time (the CPU seconds of it and the children it waited for:
 * a measure a loaded machine disturbs less than the wall clock) and its runner writes a JSON report; `tree`
 * also samples every process the phase starts (scripts/tree-cpu.ts: browsers and servers nobody waited for).
 */
function runPhase(phase: Phase, env: NodeJS.ProcessEnv, logDir: string, timings = false, tree: TreeCpu | null = null): Promise<Result> {
  const started = performance.now();
  const base = path.join(logDir, phase.name.replace(/\W/g, "-"));
  const logFile = `${base}.log`;
  const log = fs.openSync(logFile, "w");
  const runner = timings ? runnerOf(phase) : null;
  const report = runner ? `${base}.json` : undefined;
  const reporterArgs = runner === "vitest" ? ["--", "--reporter=default", "--reporter=./scripts/vitest-file-times.ts"] : runner === "playwright" ? ["--", "--reporter=list,json"] : [];
  const args = timings ? ["/usr/bin/time", "-f", "%U %S", "-o", `${base}.cpu`, ...phase.args, ...reporterArgs] : phase.args;
  console.log(`== ${phase.name}: started`);
  return new Promise((resolve) => {
    const child = spawn(args[0], args.slice(1), { cwd: ROOT, env: report ? { ...env, PLAYWRIGHT_JSON_OUTPUT_FILE: report, DM_TEST_FILE_TIMES: report } : env, stdio: ["ignore", log, log] });
    const finish = (ok: boolean, note = "") => {
      fs.closeSync(log);
      const seconds = (performance.now() - started) / 1000;
      process.stdout.write(fs.readFileSync(logFile, "utf8"));
      console.log(`== ${phase.name}: ${ok ? "passed" : `FAILED${note}`} in ${seconds.toFixed(0)} s`);
      resolve({ name: phase.name, seconds, ok, logFile, cpuSeconds: timings ? cpuSeconds(`${base}.cpu`) : undefined, treeCpuSeconds: tree?.seconds(phase.name), report });
    };
    if (child.pid !== undefined) tree?.track(phase.name, child.pid);
    child.on("error", (e) => finish(false, ` (${e.message})`));
    child.on("exit", (code, signal) => finish(code === 0, code === 0 ? "" : ` (exit ${code ?? signal})`));
  });
}

/** The user and system seconds /usr/bin/time wrote (its last line: an exit note may come first). */
function cpuSeconds(file: string): number | undefined {
  const last = fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").at(-1) : undefined;
  const [user, system] = (last ?? "").split(" ").map(Number);
  return Number.isFinite(user) && Number.isFinite(system) ? user + system : undefined;
}

/** A phase's test files by seconds, slowest first, from its JSON report (scripts/vitest-file-times.ts or Playwright's). */
function slowestFiles(report: string): { file: string; seconds: number; cpuSeconds?: number | null; tests: number }[] {
  if (!fs.existsSync(report)) return [];
  const json = JSON.parse(fs.readFileSync(report, "utf8"));
  const files: { file: string; seconds: number; cpuSeconds?: number | null; tests: number }[] = [];
  if (Array.isArray(json)) files.push(...(json as FileTime[]));
  else {
    // Playwright: suites per file, nested suites (describe) holding specs, each spec's results with a duration in ms.
    type Suite = { file?: string; specs?: { tests: { results: { duration: number }[] }[] }[]; suites?: Suite[] };
    const walk = (s: Suite): { ms: number; tests: number } =>
      [...(s.specs ?? []).map((sp) => ({ ms: sp.tests.flatMap((t) => t.results).reduce((a, r) => a + r.duration, 0), tests: 1 })), ...(s.suites ?? []).map(walk)].reduce(
        (a, b) => ({ ms: a.ms + b.ms, tests: a.tests + b.tests }),
        { ms: 0, tests: 0 },
      );
    for (const s of (json.suites ?? []) as Suite[]) {
      const { ms, tests } = walk(s);
      files.push({ file: path.join("e2e", s.file ?? "?"), seconds: ms / 1000, tests });
    }
  }
  return files.sort((a, b) => b.seconds - a.seconds);
}

/**
 * The lines of a phase's log that say what failed (vitest, Playwright, tsc, eslint), without colours, at most 80:
 * the failed tests' names and the summary first (so a cut list still names them), then each error with the
 * lines after it. The servers' own structured log lines (a test's expected provider errors) are not failures.
 */
function failureLines(log: string): string[] {
  const lines = log
    .replace(/\x1b\[[0-9;]*m/g, "")
    .split("\n")
    .filter((line) => !/^\s*(\[WebServer\]\s*)?\{"t":/.test(line) && !line.startsWith("[WebServer]"));
  const named = /^\s*(FAIL|✘)\s|^\s*\d+\) \[|error TS\d+|^\s*\d+:\d+\s+error\s|Test Files .*failed|Tests .*failed|^\s*\d+ failed/;
  const errors = /^\s*(×|❯)\s|AssertionError|Error:/;
  const names = lines.filter((line) => named.test(line));
  const details: string[] = [];
  lines.forEach((line, i) => {
    if (!errors.test(line)) return;
    // The assertion's expected/received lines follow it.
    for (const l of lines.slice(i, /AssertionError|Error:/.test(line) ? i + 6 : i + 1)) if (details.at(-1) !== l) details.push(l);
  });
  const picked = [...names, ...(names.length && details.length ? [""] : []), ...details];
  return picked.length > 80 ? [...picked.slice(0, 80), `… ${picked.length - 80} more lines`] : picked;
}

async function main() {
  const args = process.argv.slice(2);
  const serial = args.includes("--serial");
  const timings = args.includes("--timings");
  const only = args.filter((a) => a !== "--serial" && a !== "--timings");
  const known = [...LANES.flat(), ...SHARED].map((p) => p.name);
  const unknown = only.filter((n) => !known.includes(n));
  if (unknown.length) {
    console.error(`unknown phase(s): ${unknown.join(", ")}; phases: ${known.join(", ")}`);
    process.exit(2);
  }
  const wanted = (p: Phase) => only.length === 0 || only.includes(p.name);
  const lanes = LANES.map((lane) => lane.filter(wanted));
  const shared = SHARED.filter(wanted);
  // A selection that needs the bundle gets the build in front of it.
  if (only.length && !only.includes("build") && [...lanes.flat(), ...shared].some((p) => p.needsBuild)) lanes[0].unshift(BUILD);
  const selected = [...lanes.flat(), ...shared];
  // Groups run one after another: each the lanes' own phases and the shared ones the lanes take as they free.
  // --serial: every phase alone, one after another (to tell a slow or flaky phase from a crowded one).
  const groups: { lanes: Phase[][]; shared: Phase[] }[] = serial ? selected.map((p) => ({ lanes: [[p]], shared: [] })) : [{ lanes, shared }];

  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-test-logs-"));
  const env: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };
  // The typecheck phase checks every file of the project (tests and .next/types too): a run that has it builds
  // without Next's own check of the same program (next.config.mjs), which would hold up every phase after the build.
  const typechecked = selected.some((p) => p.name === "typecheck");
  let postgres: TestPostgres | null = null;
  const stopPostgres = () => {
    postgres?.stop();
    postgres = null;
  };
  process.on("SIGINT", () => {
    stopPostgres();
    process.exit(130);
  });
  process.on("SIGTERM", () => {
    stopPostgres();
    process.exit(143);
  });

  const total = performance.now();
  const results: Result[] = [];
  const tree = timings ? TreeCpu.start() : null;
  let clusterResult = null as Result | null;
  let cluster: Promise<{ seconds: number } | { error: unknown }> | null = null;
  const startCluster = () => {
    const started = performance.now();
    return (cluster ??= startTestPostgres({ inMemory: true }).then(
      (pg) => {
        postgres = pg;
        // The server's processes: the postmaster (a daemon, not the runner's child) and its backends.
        if (tree) {
          try {
            tree.track("postgres cluster", Number(fs.readFileSync(path.join(pg.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]));
          } catch {
            // not readable here: the row shows no CPU
          }
        }
        return { seconds: (performance.now() - started) / 1000 };
      },
      // Held until a phase needs the cluster, which then fails with it (not an unhandled rejection).
      (error: unknown) => ({ error }),
    ));
  };
  // The cluster starts beside the build, ready before a phase needs it (with --serial, when one does).
  if (!serial && selected.some((p) => p.needsPostgres)) void startCluster();
  /** A phase that cannot start: failed, with why in its log. */
  const notRun = (phase: Phase, why: unknown): Result => {
    const logFile = path.join(logDir, `${phase.name.replace(/\W/g, "-")}.log`);
    fs.writeFileSync(logFile, `Error: ${phase.name} did not run: ${why instanceof Error ? why.message : String(why)}\n`);
    console.log(`== ${phase.name}: FAILED (did not run)`);
    return { name: phase.name, seconds: 0, ok: false, logFile };
  };
  // The type check's route types, before the build cleans .next (scripts/typecheck.ts).
  let typesPrepared: unknown = null;
  if (typechecked) {
    try {
      prepareTypecheck();
    } catch (e) {
      typesPrepared = e;
    }
  }
  // Phases that need the bundle wait for the build; a failed build too lets them run (and fail), so every phase runs.
  let built: () => void = () => {};
  const buildDone = selected.includes(BUILD) ? new Promise<void>((resolve) => (built = resolve)) : Promise.resolve();
  const run = async (p: Phase): Promise<Result> => {
    if (p.name === "typecheck" && typesPrepared) return notRun(p, typesPrepared);
    if (p.needsBuild) await buildDone;
    if (p.needsPostgres && !env.DM_TEST_PG_ADMIN_URL) {
      const started = await startCluster();
      if ("error" in started) return notRun(p, `the PostgreSQL cluster did not start: ${started.error instanceof Error ? started.error.message : String(started.error)}`);
      // Read by tests/pg/global-setup.ts: both PostgreSQL suites use this cluster instead of starting their own.
      env.DM_TEST_PG_ADMIN_URL ??= postgres!.url;
      clusterResult ??= { name: "postgres cluster", seconds: started.seconds, ok: true };
    }
    const result = await runPhase(p, p === BUILD && typechecked ? { ...env, DM_TEST_BUILD_TYPES_CHECKED: "1" } : env, logDir, timings, tree);
    if (p === BUILD) built();
    return result;
  };
  try {
    for (const group of groups) {
      const queue = [...group.shared];
      const done = await Promise.all(
        group.lanes.map(async (lane) => {
          const laneResults: Result[] = [];
          for (const p of lane) laneResults.push(await run(p));
          for (let p = queue.shift(); p; p = queue.shift()) laneResults.push(await run(p));
          return laneResults;
        }),
      );
      results.push(...done.flat());
    }
  } finally {
    // A cluster still starting when the run ended is stopped once it is up.
    await cluster;
    if (clusterResult) {
      clusterResult.treeCpuSeconds = tree?.seconds("postgres cluster");
      results.unshift(clusterResult);
    }
    stopPostgres();
    tree?.stop();
  }
  const seconds = (performance.now() - total) / 1000;
  // A CI log may keep only its tail: why each failed phase failed, then the table, then the failed tests' names last.
  const failed = results.filter((r) => !r.ok && r.logFile);
  const why = failed.map((r) => ({ name: r.name, lines: failureLines(fs.readFileSync(r.logFile!, "utf8")) }));
  for (const w of why) console.log(`\n== why ${w.name} failed\n${w.lines.join("\n")}`);
  console.log(`\n== npm test: seconds per phase (${serial ? "one at a time" : "two lanes side by side"})`);
  if (timings)
    console.log("(cpu: the phase and the processes it waited for, /usr/bin/time; tree: every process it started, sampled each second, browsers and servers included)");
  const n = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(0));
  const cpu = (r: Result) => (timings ? `${n(r.cpuSeconds).padStart(7)} s cpu${n(r.treeCpuSeconds).padStart(7)} s tree` : "");
  for (const r of results) console.log(`${r.name.padEnd(18)} ${r.seconds.toFixed(0).padStart(6)} s${cpu(r)}  ${r.ok ? "ok" : "FAILED"}`);
  console.log(`${"total".padEnd(18)} ${seconds.toFixed(0).padStart(6)} s  (${os.availableParallelism()} cores, load average ${os.loadavg()[0].toFixed(1)})`);
  for (const r of results.filter((r) => r.report)) {
    const files = slowestFiles(r.report!);
    console.log(`\n== ${r.name}: slowest of ${files.length} files (seconds, CPU seconds, tests) — the whole report: ${r.report}`);
    for (const f of files.slice(0, 15)) console.log(`${f.seconds.toFixed(1).padStart(7)}  ${(f.cpuSeconds?.toFixed(1) ?? "").padStart(7)}  ${String(f.tests).padStart(4)}  ${f.file}`);
  }
  const names = why.flatMap((w) => w.lines.filter((l) => /^\s*(FAIL|✘)\s|^\s*\d+\) \[|error TS\d+/.test(l)).map((l) => `${w.name}: ${l.trim()}`));
  if (names.length) console.log(`\n== failed\n${[...new Set(names)].slice(0, 12).join("\n")}`);
  if (failed.length || timings) console.log(`(the phases' whole logs${timings ? " and reports" : ""}: ${logDir})`);
  else fs.rmSync(logDir, { recursive: true, force: true });
  process.exit(results.every((r) => r.ok) ? 0 : 1);
}

void main();
