import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { tasks } from "@/lib/db/schema/pg/governance";
import { appendAudit, appendAuditPg, hasAuditEntry, listAuditByTargets, listAuditTail, pgLedger, verifyAuditChain } from "@/lib/governance/audit";
import { useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

let url: string;
const handles: PgHandle[] = [];
async function replica(max = 4): Promise<PgHandle> {
  const h = await openPgHandle({ url, max });
  handles.push(h);
  return h;
}

beforeAll(async () => {
  url = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(handles.map(closePgHandle));
});

async function ids(h: PgHandle): Promise<number[]> {
  return (await h.pool.query<{ id: string }>("select id from audit_log order by id")).rows.map((r) => Number(r.id));
}

async function reset(h: PgHandle) {
  await h.pool.query("truncate audit_log, tasks cascade");
}

describe("the audit log on PostgreSQL", () => {
  it("links each entry to the one before and verifies", async () => {
    const h = await replica();
    await reset(h);
    const a = await appendAuditPg({ db: h.db, entry: { actor: "user:ann", action: "token.create", target: "token:1", details: { scopes: ["read"] } } });
    const b = await appendAuditPg({ db: h.db, entry: { actor: "agent:x", action: "task.create", target: "task:t1", reason: "nightly" } });
    expect(a.id).toBe(1);
    expect(b.prevHash).toBe(a.hash);
    expect(await verifyAuditChain({ handle: pgLedger(h.db) })).toEqual({ ok: true, entries: 2 });
    expect(await hasAuditEntry({ handle: pgLedger(h.db), action: "task.create", target: "task:t1" })).toBe(true);
    expect((await listAuditByTargets({ handle: pgLedger(h.db), targets: ["token:1"] })).map((r) => r.action)).toEqual(["token.create"]);
  });

  it("reports the first entry whose contents were changed after the fact", async () => {
    const h = await replica();
    await reset(h);
    for (let i = 0; i < 5; i++) await appendAuditPg({ db: h.db, entry: { actor: "user:ann", action: "memory.update", target: `memory:${i}` } });
    await h.pool.query("update audit_log set actor = 'user:mallory' where id = 3");
    const result = await verifyAuditChain({ handle: pgLedger(h.db) });
    expect(result).toMatchObject({ ok: false, entries: 2, brokenAtId: 3, reason: expect.stringContaining("hash") });
  });

  it("stays one gap-free chain under concurrent writers on two replicas' pools", async () => {
    const replicaA = await replica(6);
    const replicaB = await replica(6);
    await reset(replicaA);
    const writers = 12;
    const perWriter = 20;
    await Promise.all(
      Array.from({ length: writers }, (_, w) =>
        (async () => {
          const h = w % 2 === 0 ? replicaA : replicaB;
          for (let i = 0; i < perWriter; i++) await appendAuditPg({ db: h.db, entry: { actor: `agent:w${w}`, action: "write", target: `w${w}:${i}` } });
        })(),
      ),
    );
    const total = writers * perWriter;
    expect(await verifyAuditChain({ handle: pgLedger(replicaB.db) })).toEqual({ ok: true, entries: total });
    expect(await ids(replicaA)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    // Every writer's every entry is there exactly once.
    const perTarget = await replicaA.pool.query<{ n: string }>("select count(*) as n from audit_log group by target having count(*) <> 1");
    expect(perTarget.rowCount).toBe(0);
  });

  it("commits an audited change and its audit row together, and a rolled-back one leaves no row and no gap", async () => {
    const h = await replica();
    await reset(h);
    const now = Date.now();
    const task = { createdAt: now, requestedBy: "agent:x", intent: "i", specJson: "{}", requiredChecksJson: "[]", verdict: "pending" as const, updatedAt: now };
    await h.db.transaction(async (tx) => {
      await tx.insert(tasks).values({ taskId: "kept", clientId: "kept", ...task });
      await appendAuditPg({ db: tx, entry: { actor: "agent:x", action: "task.create", target: "task:kept" } });
    });
    await expect(
      h.db.transaction(async (tx) => {
        await tx.insert(tasks).values({ taskId: "dropped", clientId: "dropped", ...task });
        await appendAuditPg({ db: tx, entry: { actor: "agent:x", action: "task.create", target: "task:dropped" } });
        throw new Error("validation failed after the audit row was written");
      }),
    ).rejects.toThrow("validation failed");
    const next = await appendAuditPg({ db: h.db, entry: { actor: "agent:x", action: "task.create", target: "task:next" } });
    expect(next.id).toBe(2);
    expect((await h.db.execute<{ task_id: string }>(sql`select task_id from tasks order by task_id`)).rows.map((r) => r.task_id)).toEqual(["kept"]);
    expect(await hasAuditEntry({ handle: pgLedger(h.db), action: "task.create", target: "task:dropped" })).toBe(false);
    expect(await verifyAuditChain({ handle: pgLedger(h.db) })).toEqual({ ok: true, entries: 2 });
  });

  it("verifies a chain written on SQLite and copied over row for row (the same hashes on both backends)", async () => {
    const h = await replica();
    await reset(h);
    const { cleanup } = useTempDataDir();
    try {
      appendAudit({ actor: "user:ann", action: "store.create", target: "store:photos", details: { description: "émigré ☃" } });
      appendAudit({ actor: "agent:x", action: "task.create", target: "task:t1", reason: "because" });
      appendAudit({ actor: "agent:x", action: "memory.delete", target: null });
      const rows = listAuditTail({ limit: 1000 }).reverse();
      for (const r of rows) {
        await h.pool.query("insert into audit_log (id, ts, actor, action, target, reason, details, prev_hash, hash) values ($1,$2,$3,$4,$5,$6,$7,$8,$9)", [
          r.id, r.ts, r.actor, r.action, r.target, r.reason, r.details, r.prevHash, r.hash,
        ]);
      }
      expect(await verifyAuditChain({ handle: pgLedger(h.db) })).toEqual({ ok: true, entries: rows.length });
      // And the chain continues on PostgreSQL from where SQLite left it.
      const next = await appendAuditPg({ db: h.db, entry: { actor: "user:ann", action: "store.delete", target: "store:photos" } });
      expect(next.id).toBe(rows.at(-1)!.id + 1);
      expect(await verifyAuditChain({ handle: pgLedger(h.db) })).toEqual({ ok: true, entries: rows.length + 1 });
    } finally {
      cleanup();
    }
  });
});
