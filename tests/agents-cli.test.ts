import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { stores } from "@/lib/stores/backend";
import { spawnCli } from "./fixtures/cli";
import { governanceSql, itSqliteOnly, onPg, seedStore, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;
let scratch: string;
beforeEach(async () => {
  env = await useTestBackend();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-cli-out-"));
});
afterEach(async () => {
  await env.cleanup();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const cli = (...args: string[]) => spawnCli({ args, env: { DATA_DIR: env.dataDir, DUALMIND_ADMIN_PASSWORD: "test-admin-password", DUALMIND_LOG_LEVEL: "warn" } });

describe("agent CLI commands", () => {
  it("stores create, stores list and health --json report this backend's stores and audit chain, with exit codes scripts can trust", async () => {
    expect(cli("stores", "create", "notes").code).toBe(0);
    expect(await stores().listStoreNames()).toContain("notes");
    const listed = cli("stores", "list", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).stores.map((s: { name: string }) => s.name)).toEqual(await stores().listStoreNames());
    const health = cli("health", "--json");
    expect(health.code, health.stderr).toBe(0);
    const report = JSON.parse(health.stdout);
    expect(report.stores.map((s: { store: string }) => s.store)).toEqual(await stores().listStoreNames());
    expect(report.audit).toEqual(await governance().verifyAuditChain({}));
    expect(report.audit.ok).toBe(true);
    expect(cli("health", "nope").code).toBe(2);
  }, 180_000);

  it("backup: a consistent copy of DATA_DIR on SQLite; with DATABASE_URL refused, naming pg_dump", async () => {
    // The store is made in-process (the first test makes one through the CLI).
    await seedStore("notes");
    const backupDir = path.join(scratch, "backup");
    const backup = cli("backup", backupDir, "--json");
    if (onPg) {
      expect(backup.code).toBe(2);
      expect(backup.stderr).toContain("pg_dump");
      expect(fs.existsSync(backupDir) ? fs.readdirSync(backupDir) : []).toEqual([]);
      return;
    }
    expect(backup.code).toBe(0);
    expect(JSON.parse(backup.stdout).format).toBe("dualmind.backup.v1");
    expect(fs.existsSync(path.join(backupDir, "stores", "notes", "index.db"))).toBe(true);
    // A second backup into the same directory is refused, not merged.
    const again = cli("backup", backupDir);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("not empty");
  }, 180_000);

  itSqliteOnly(
    "export and import a store bundle",
    "a bundle is a store's index.db snapshot and memory files; PostgreSQL stores are moved with pg_dump or migrate-data",
    async () => {
      // The store is made in-process (the first test makes one through the CLI).
      await seedStore("notes");
      expect(cli("export", "bundle", "nope", path.join(scratch, "b")).code).toBe(2);
      expect(cli("export", "bundle").code).toBe(2);
      const bundle = cli("export", "bundle", "notes", path.join(scratch, "bundle"), "--json");
      expect(bundle.code).toBe(0);
      expect(JSON.parse(bundle.stdout).store).toBe("notes");
      const imported = cli("import", "bundle", path.join(scratch, "bundle"), "--as", "notes-copy", "--json");
      expect(imported.code).toBe(0);
      expect(JSON.parse(imported.stdout).store).toBe("notes-copy");
      expect(cli("verify", "notes-copy").code).toBe(0);
    },
    180_000,
  );

  itSqliteOnly(
    "reindex runs the same audited admin job as the API: a job row and one audit entry naming the CLI user",
    "reindex rebuilds a store from its memory/ folder on disk, which a PostgreSQL store does not have (its memories are rows)",
    async () => {
      // The store is made in-process (the first test makes one through the CLI).
      await seedStore("notes");
      fs.mkdirSync(path.join(env.dataDir, "stores", "notes", "memory", "inbox"), { recursive: true });
      fs.writeFileSync(path.join(env.dataDir, "stores", "notes", "memory", "inbox", "dropped.md"), "# Dropped in by hand\n");
      const r = cli("reindex", "notes", "--json");
      expect(r.code).toBe(0);
      const job = JSON.parse(r.stdout);
      expect(job).toMatchObject({ kind: "reindex", store: "notes", status: "succeeded", actor: `cli:${process.env.USER ?? "local"}`, result: { counts: { added: 1 } } });
      expect(await governanceSql("select id, status from admin_jobs")).toEqual([{ id: job.id, status: "succeeded" }]);
      expect(await governanceSql("select actor, details from audit_log where action = 'store.reindex'")).toEqual([{ actor: job.actor, details: JSON.stringify({ jobId: job.id }) }]);
      expect(cli("reindex", "nope").code).toBe(2);
    },
    180_000,
  );
});
