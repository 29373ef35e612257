import fs from "node:fs";
import path from "node:path";

/**
 * Test files share their worker process (vitest's `isolate: false`): a file no longer pays for a process and a
 * module graph of its own, which was most of a short file's time. tests/setup.ts gives each file a fresh
 * process's state anyway (the environment, the working directory, the process-wide registries on globalThis).
 * A file that replaces modules (`vi.mock` and the like) keeps a process of its own: a replaced module would
 * reach the files after it.
 */
const REPLACES_MODULES = /\bvi\.(mock|doMock|unmock|doUnmock|resetModules|stubGlobal)\(/;

/** The `.test.ts` files under `dir` (recursively), relative to the repository. */
export function testFilesUnder(dir: string): string[] {
  const root = path.resolve(__dirname, "..");
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(path.join(root, d), { withFileTypes: true })) {
      const rel = path.join(d, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith(".test.ts")) out.push(rel);
    }
  };
  walk(dir);
  return out.sort();
}

/** Two vitest projects over `files`: those that may share a worker process, and those that replace modules. */
export function sharedAndIsolated(files: string[]) {
  const root = path.resolve(__dirname, "..");
  const own = files.filter((f) => REPLACES_MODULES.test(fs.readFileSync(path.join(root, f), "utf8")));
  const shared = files.filter((f) => !own.includes(f));
  return [
    { extends: true as const, test: { name: "shared", include: shared, isolate: false } },
    ...(own.length ? [{ extends: true as const, test: { name: "own-process", include: own, isolate: true } }] : []),
  ];
}
