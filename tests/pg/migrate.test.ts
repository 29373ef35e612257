import { afterEach, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { createTestDatabase } from "./helpers";

const open: PgHandle[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map(closePgHandle));
});

async function openHandle(url: string, max = 4): Promise<PgHandle> {
  const h = await openPgHandle({ url, max });
  open.push(h);
  return h;
}

describe("PostgreSQL governance migrations", () => {
  it("create every ledger table of the SQLite governance schema, and record the schema version", async () => {
    const url = await createTestDatabase();
    const h = await openHandle(url);
    const tables = (
      await h.pool.query<{ t: string }>("select table_name as t from information_schema.tables where table_schema = 'public' order by 1")
    ).rows.map((r) => r.t);
    expect(tables).toEqual([
      "admin_jobs", "agent_ledger_usage", "api_tokens", "audit_log", "dialectic_annotations", "dialectic_messages", "dialectic_sessions",
      "embed_workers", "health_events", "login_throttle", "meta", "metric_rollups", "metric_snapshots", "overrides",
      "provenance", "provider_state", "retrieval_counts", "self_recall_probe_sets", "self_recall_runs", "skill_runs", "store_status_current", "task_assignees", "tasks", "users", "validations",
    ]);
    const version = (await h.pool.query<{ value: string }>("select value from meta where key = 'schema_version'")).rows[0]?.value;
    expect(version).toMatch(/^\d{4}_/);
  });

  it("are applied once when several replicas start at the same moment", async () => {
    const url = await createTestDatabase();
    const handles = await Promise.all([openHandle(url), openHandle(url), openHandle(url)]);
    const applied = Number((await handles[0].pool.query<{ n: string }>("select count(*) as n from drizzle.governance_migrations")).rows[0].n);
    const reopened = await openHandle(url);
    const afterReopen = Number((await reopened.pool.query<{ n: string }>("select count(*) as n from drizzle.governance_migrations")).rows[0].n);
    expect(applied).toBeGreaterThan(0);
    expect(afterReopen).toBe(applied);
  });

  it("keep epoch-millisecond times past 2038 exactly (bigint, not int4)", async () => {
    const url = await createTestDatabase();
    const h = await openHandle(url);
    const year3000 = Date.UTC(3000, 0, 1);
    await h.pool.query(
      "insert into store_status_current (store, status, reason, since) values ('default', 'healthy', '', $1)",
      [year3000],
    );
    const row = await h.db.query.storeStatusCurrent.findFirst();
    expect(row?.since).toBe(year3000);
  });
});
