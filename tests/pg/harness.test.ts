import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { describe, expect, it } from "vitest";
import { clusterParent } from "./harness";
import { createTestDatabase, withClient } from "./helpers";

describe("the PostgreSQL test server", () => {
  it("is a real PostgreSQL 15+ server whose cluster the dualmind role owns", async () => {
    const url = await createTestDatabase();
    const { version, owner } = await withClient(url, async (c) => ({
      version: Number((await c.query<{ v: string }>("select current_setting('server_version_num') as v")).rows[0].v),
      owner: (await c.query<{ u: string }>("select pg_get_userbyid(datdba) as u from pg_database where datname = 'template1'")).rows[0].u,
    }));
    expect(version).toBeGreaterThanOrEqual(150000);
    expect(owner).toBe("dualmind");
  });

  it("lives in memory (/dev/shm) when the machine has room for the suite's databases, else in the temp dir", async () => {
    const url = await createTestDatabase();
    const dataDirectory = await withClient(url, async (c) => (await c.query<{ d: string }>("select current_setting('data_directory') as d")).rows[0].d);
    const clusterDir = path.dirname(dataDirectory);
    expect(path.basename(clusterDir)).toMatch(/^dualmind-pg-/);
    expect(["/dev/shm", os.tmpdir()]).toContain(path.dirname(clusterDir));
    // Asked now, with the cluster already holding some of the room it was given: when the answer is still
    // "in memory", it was at the start too (the cluster only grows).
    if (clusterParent(true) === "/dev/shm") expect(dataDirectory.startsWith("/dev/shm/dualmind-pg-")).toBe(true);
  });

  it("gives every test file its own database", async () => {
    const a = await createTestDatabase();
    const b = await createTestDatabase();
    await withClient(a, (c) => c.query("create table only_in_a (x int)"));
    const inB = await withClient(b, async (c) => (await c.query("select to_regclass('only_in_a') as t")).rows[0].t);
    const inA = await withClient(a, async (c) => (await c.query("select to_regclass('only_in_a') as t")).rows[0].t);
    expect(inA).toBe("only_in_a");
    expect(inB).toBeNull();
  });

  it("blocks a second session on an advisory lock the first one holds (real locking, not a fake)", async () => {
    const url = await createTestDatabase();
    const holder = new Client({ connectionString: url });
    const waiter = new Client({ connectionString: url });
    await holder.connect();
    await waiter.connect();
    try {
      await holder.query("select pg_advisory_lock(42)");
      const tryWhileHeld = (await waiter.query<{ ok: boolean }>("select pg_try_advisory_lock(42) as ok")).rows[0].ok;
      await holder.query("select pg_advisory_unlock(42)");
      const tryAfter = (await waiter.query<{ ok: boolean }>("select pg_try_advisory_lock(42) as ok")).rows[0].ok;
      expect(tryWhileHeld).toBe(false);
      expect(tryAfter).toBe(true);
    } finally {
      await holder.end();
      await waiter.end();
    }
  });
});
