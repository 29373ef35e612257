import Database from "better-sqlite3";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const CLI = path.join(process.cwd(), "scripts", "dualmind.mjs");

let dataDir: string;
let scratch: string;
beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-cli-"));
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-cli-out-"));
});
afterEach(() => {
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(scratch, { recursive: true, force: true });
});

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { env: { ...process.env, DATA_DIR: dataDir, DUALMIND_ADMIN_PASSWORD: "test-admin-password", DUALMIND_LOG_LEVEL: "warn" }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("agent CLI commands", () => {
  it("back up, export a bundle and report health with --json output and exit codes scripts can trust", () => {
    expect(cli("stores", "create", "notes").code).toBe(0);
    const health = cli("health", "--json");
    expect(health.code).toBe(0);
    const report = JSON.parse(health.stdout);
    expect(report.stores.map((s: { store: string }) => s.store)).toContain("notes");
    expect(report.audit.ok).toBe(true);

    const backupDir = path.join(scratch, "backup");
    const backup = cli("backup", backupDir, "--json");
    expect(backup.code).toBe(0);
    expect(JSON.parse(backup.stdout).format).toBe("dualmind.backup.v1");
    expect(fs.existsSync(path.join(backupDir, "stores", "notes", "index.db"))).toBe(true);
    // A second backup into the same directory is refused, not merged.
    const again = cli("backup", backupDir);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("not empty");

    expect(cli("export", "bundle", "nope", path.join(scratch, "b")).code).toBe(2);
    expect(cli("export", "bundle").code).toBe(2);
    const bundle = cli("export", "bundle", "notes", path.join(scratch, "bundle"), "--json");
    expect(bundle.code).toBe(0);
    expect(JSON.parse(bundle.stdout).store).toBe("notes");
    const imported = cli("import", "bundle", path.join(scratch, "bundle"), "--as", "notes-copy", "--json");
    expect(imported.code).toBe(0);
    expect(JSON.parse(imported.stdout).store).toBe("notes-copy");
    expect(cli("verify", "notes-copy").code).toBe(0);
  }, 60_000);

  it("reindex runs the same audited admin job as the API: a job row and one audit entry naming the CLI user", () => {
    expect(cli("stores", "create", "notes").code).toBe(0);
    fs.mkdirSync(path.join(dataDir, "stores", "notes", "memory", "inbox"), { recursive: true });
    fs.writeFileSync(path.join(dataDir, "stores", "notes", "memory", "inbox", "dropped.md"), "# Dropped in by hand\n");
    const r = cli("reindex", "notes", "--json");
    expect(r.code).toBe(0);
    const job = JSON.parse(r.stdout);
    expect(job).toMatchObject({ kind: "reindex", store: "notes", status: "succeeded", actor: `cli:${process.env.USER ?? "local"}`, result: { counts: { added: 1 } } });
    const gov = new Database(path.join(dataDir, "governance.db"), { readonly: true });
    try {
      expect(gov.prepare("select id, status from admin_jobs").all()).toEqual([{ id: job.id, status: "succeeded" }]);
      expect(gov.prepare("select actor, details from audit_log where action = 'store.reindex'").all()).toEqual([{ actor: job.actor, details: JSON.stringify({ jobId: job.id }) }]);
    } finally {
      gov.close();
    }
    expect(cli("reindex", "nope").code).toBe(2);
  }, 60_000);
});
