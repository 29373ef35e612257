/**
 * The prebuilt CLI (scripts/cli-bundle.mjs, run by scripts/dualmind.mjs): built by the first command of an
 * installation, it answers exactly as the TypeScript does under tsx, and a changed source is never answered by
 * the old bundle. Each test works on a copy of the installation in a temp dir (node_modules linked), so editing
 * its sources disturbs no other test.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../scripts/build-freshness";
import { patience } from "./fixtures/patience";

let install: string;
let dataDir: string;

beforeAll(() => {
  install = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-install-"));
  for (const entry of ["lib", "scripts", "drizzle", "native", "package.json", "package-lock.json", "tsconfig.json"]) {
    fs.cpSync(path.join(ROOT, entry), path.join(install, entry), { recursive: true });
  }
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(install, "node_modules"));
  dataDir = path.join(install, "data");
});
afterAll(() => fs.rmSync(install, { recursive: true, force: true }));

type Run = { code: number | null; stdout: string; stderr: string };
const env = () => ({ ...process.env, DATA_DIR: dataDir, DUALMIND_ADMIN_PASSWORD: "test-admin-password", DUALMIND_LOG_LEVEL: "warn", DUALMIND_INSTALL_ROOT: install });
const run = (argv: string[]): Run => {
  const r = spawnSync(process.execPath, argv, { cwd: install, env: env(), encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};
/** What a user runs: `npx dualmind …`. */
const dualmind = (...args: string[]) => run([path.join(install, "scripts", "dualmind.mjs"), ...args]);
/** The TypeScript itself, under tsx. */
const typescript = (...args: string[]) => run(["--import", "tsx", path.join(install, "scripts", "cli.ts"), ...args]);
const bundle = () => path.join(install, "dist", "cli.cjs");

describe("the prebuilt CLI", () => {
  it("is built by the first command and answers as the TypeScript does: output, errors and exit codes", () => {
    expect(fs.existsSync(bundle())).toBe(false);
    const help = dualmind("--help");
    expect(fs.existsSync(bundle())).toBe(true);
    expect(help).toEqual(typescript("--help"));
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: dualmind <command> [--json]");

    const unknown = dualmind("stores", "nope");
    expect(unknown.code).toBe(2);
    expect(unknown).toEqual(typescript("stores", "nope"));

    const usage = dualmind("stores", "create");
    expect(usage.code).toBe(2);
    expect(usage).toEqual(typescript("stores", "create"));

    expect(dualmind("stores", "create", "notes", "--json").code).toBe(0);
    const listed = dualmind("stores", "list", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).stores.map((s: { name: string }) => s.name)).toContain("notes");
    expect(listed).toEqual(typescript("stores", "list", "--json"));

    const missing = dualmind("ledger", "task", "no-such-task");
    expect(missing).toEqual({ code: 2, stdout: "", stderr: "error: no task no-such-task\n" });
    expect(missing).toEqual(typescript("ledger", "task", "no-such-task"));
  }, patience(120_000));

  it("never answers from a bundle older than its sources: an edit shows at once, and a broken edit fails as the TypeScript does", () => {
    expect(dualmind("--help").code).toBe(0);
    const built = fs.statSync(bundle()).mtimeMs;
    const commands = path.join(install, "scripts", "commands", "db-commands.ts");
    const source = fs.readFileSync(commands, "utf8");
    expect(source).toContain("apply database migrations now");

    fs.writeFileSync(commands, source.replace("apply database migrations now", "apply every pending migration now"));
    const edited = dualmind("--help");
    expect(edited.code).toBe(0);
    expect(edited.stdout).toContain("apply every pending migration now");
    expect(edited.stdout).not.toContain("apply database migrations now");
    expect(fs.statSync(bundle()).mtimeMs).toBeGreaterThan(built);

    // An edit that keeps an old modification time (a release unpacked with its files' times, `cp -p`, a clock that
    // was ahead): still a change.
    const before = fs.statSync(commands);
    fs.writeFileSync(commands, source.replace("apply database migrations now", "apply the migrations from the archive"));
    fs.utimesSync(commands, before.atime, new Date(before.mtimeMs - 86_400_000));
    const unpacked = dualmind("--help");
    expect(unpacked.code).toBe(0);
    expect(unpacked.stdout).toContain("apply the migrations from the archive");

    // A source that does not compile: no bundle can be built, and the old one is not run.
    fs.writeFileSync(commands, `${source}\nexport const broken = ;\n`);
    const broken = dualmind("--help");
    expect(broken.code).not.toBe(0);
    expect(broken.stdout).not.toContain("usage: dualmind");
    expect(broken.stderr).toContain("db-commands.ts");
  }, patience(120_000));
});
