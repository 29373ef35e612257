import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, PG_LOCK, type PgHandle } from "@/lib/db/pg";
import { infrastructureError } from "@/lib/errors";
import { appendAuditPg, verifyAuditChain, pgLedger } from "@/lib/governance/audit";
import { caught, createTestDatabase, withClient } from "./helpers";

/** Short limits, so a test sees them act (the defaults are seconds: DUALMIND_PG_*_TIMEOUT_MS). */
const SHORT = { statementMs: 1_000, lockMs: 200, idleInTransactionMs: 500 };

let url: string;
let handle: PgHandle;
beforeAll(async () => {
  url = await createTestDatabase();
  handle = await openPgHandle({ url, max: 3, timeouts: SHORT });
});
afterAll(async () => {
  await closePgHandle(handle);
});

describe("PostgreSQL session limits on every pooled connection", () => {
  it("a statement over the statement timeout fails with a clear 503 instead of running on", async () => {
    const e = await caught(handle.pool.query("select pg_sleep(20)"));
    expect((e as { code?: string }).code).toBe("57014");
    const answer = infrastructureError(e);
    expect(answer).toMatchObject({ code: "unavailable", status: 503 });
    expect(answer?.message).toMatch(/DUALMIND_PG_STATEMENT_TIMEOUT_MS/);
    // The connection is usable at once.
    expect((await handle.pool.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
  });

  it("an advisory lock held elsewhere does not block an audit append for ever: it fails with 503, then succeeds once released", async () => {
    await withClient(url, async (other) => {
      await other.query("select pg_advisory_lock($1)", [PG_LOCK.auditChain]);
      const e = await caught(appendAuditPg({ db: handle.db, entry: { actor: "user:ann", action: "test.locked", target: "t" } }));
      const answer = infrastructureError(e);
      expect(answer).toMatchObject({ code: "unavailable", status: 503 });
      expect(answer?.message).toMatch(/DUALMIND_PG_LOCK_TIMEOUT_MS/);
      await other.query("select pg_advisory_unlock($1)", [PG_LOCK.auditChain]);
    });
    await appendAuditPg({ db: handle.db, entry: { actor: "user:ann", action: "test.after", target: "t" } });
    expect((await verifyAuditChain({ handle: pgLedger(handle.db) })).ok).toBe(true);
  });

  it("a transaction left idle is ended by the server, which frees its row locks", async () => {
    await handle.pool.query("create table if not exists held (id int primary key, v int); insert into held values (1, 0) on conflict do nothing");
    const client = await handle.pool.connect();
    try {
      await client.query("begin");
      await client.query("update held set v = v + 1 where id = 1");
      // The request that opened it stalls (a crash between two statements) longer than the idle limit.
      await new Promise((r) => setTimeout(r, SHORT.idleInTransactionMs * 3));
      const e = await caught(client.query("select 1"));
      expect(infrastructureError(e)).toMatchObject({ code: "unavailable", status: 503 });
    } finally {
      client.release(true);
    }
    // Its lock is gone: another write to the row goes through (within the lock timeout).
    await handle.pool.query("update held set v = v + 10 where id = 1");
    expect((await handle.pool.query("select v from held where id = 1")).rows).toEqual([{ v: 10 }]);
  });

  it("replicas starting while another migrates wait for it, past the lock timeout", async () => {
    await withClient(url, async (other) => {
      await other.query("select pg_advisory_lock($1)", [PG_LOCK.migrate]);
      const opening = openPgHandle({ url, max: 1, timeouts: SHORT });
      // Well past the lock timeout, the opening replica is still waiting, not failed.
      const early = await Promise.race([opening.then(() => "opened", () => "failed"), new Promise((r) => setTimeout(() => r("waiting"), SHORT.lockMs * 4))]);
      expect(early).toBe("waiting");
      await other.query("select pg_advisory_unlock($1)", [PG_LOCK.migrate]);
      await closePgHandle(await opening);
    });
  });
});
