import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, openPgPool, type PgHandle } from "@/lib/db/pg";
import { createTask } from "@/lib/governance/ledger";
import { infrastructureError } from "@/lib/errors";
import { caught, createTestDatabase } from "./helpers";

let url: string;
let handle: PgHandle;
beforeAll(async () => {
  url = await createTestDatabase();
  handle = await openPgHandle({ url, max: 4 });
});
afterAll(async () => {
  await closePgHandle(handle);
});

describe("PostgreSQL failures become 503 answers, not unexplained 500s", () => {
  it("a full pool: waiting past the connection timeout is 503", async () => {
    const pool = openPgPool({ url, max: 1, connectionTimeoutMs: 200 });
    const held = await pool.connect();
    try {
      const e = await caught(pool.query("select 1"));
      expect(infrastructureError(e)).toMatchObject({ code: "unavailable", status: 503 });
    } finally {
      held.release();
      await pool.end();
    }
  });

  it("the loser of a deadlock is 503 (retry), and the winner commits", async () => {
    await handle.pool.query("create table if not exists pair (id int primary key, v int); insert into pair values (1, 0), (2, 0) on conflict do nothing");
    const a = new Client({ connectionString: url });
    const b = new Client({ connectionString: url });
    await a.connect();
    await b.connect();
    try {
      await a.query("begin");
      await b.query("begin");
      await a.query("update pair set v = v + 1 where id = 1");
      await b.query("update pair set v = v + 1 where id = 2");
      const results = await Promise.allSettled([a.query("update pair set v = v + 1 where id = 2"), b.query("update pair set v = v + 1 where id = 1")]);
      const loser = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      expect(infrastructureError(loser.reason)).toMatchObject({ code: "unavailable", status: 503 });
    } finally {
      await a.query("rollback").catch(() => undefined);
      await b.query("rollback").catch(() => undefined);
      await a.end();
      await b.end();
    }
  });

  it("a connection the server terminates (restart, fail-over) is 503, does not crash the process, and the pool recovers", async () => {
    const other = await createTestDatabase();
    const h = await openPgHandle({ url: other, max: 2 });
    try {
      // Terminate every session of this database from outside, as a fail-over or restart would.
      const admin = new Client({ connectionString: url });
      await admin.connect();
      const client = await h.pool.connect();
      const pid = (await client.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0].pid;
      await admin.query("select pg_terminate_backend($1)", [pid]);
      await admin.end();
      const e = await caught(client.query("select 1"));
      client.release(true);
      expect(infrastructureError(e)).toMatchObject({ code: "unavailable" });
      // The pool replaces the dead connection: the next domain call works.
      const created = await createTask({ handle: h, input: { intent: "after the restart", spec: {} }, requestedBy: "agent:a" });
      expect(created.created).toBe(true);
    } finally {
      await closePgHandle(h);
    }
  });
});
