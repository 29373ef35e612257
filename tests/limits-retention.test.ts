import Database from "better-sqlite3";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getGovernance } from "@/lib/db/connection";
import { loadQueryBudget, QUERY_BUDGET_EXTENSION } from "@/lib/db/query-budget";
import { appendAudit, verifyAuditChain } from "@/lib/governance/audit";
import { logRecallEvent } from "@/lib/recall/events";
import { createStore, openStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

/** What a read token's calls leave behind stays bounded: the recall log, audit details; and stored SQL cannot reach the query budget. */
let env: ReturnType<typeof useTempDataDir>;
beforeAll(() => {
  env = useTempDataDir({ DUALMIND_RECALL_EVENTS_MAX_ROWS: "100", DUALMIND_AUDIT_DETAIL_MAX_BYTES: "1024" });
  getGovernance();
  createStore({ input: { name: "recalls" }, actor: "test" });
});
afterAll(() => env.cleanup());

describe("the recall log", () => {
  it("keeps at most DUALMIND_RECALL_EVENTS_MAX_ROWS (plus one trim's worth) and cuts the logged query text", () => {
    const handle = openStore({ store: "recalls" });
    for (let i = 0; i < 350; i++) {
      logRecallEvent({ handle, event: { agentId: "reader", query: `q${i} ` + "z".repeat(2000), mode: "lexical", fallbackReason: null, latencyMs: 1, cacheHit: false, warning: false, hits: [{ artifact: "trace", refId: 1, score: 0.5, summary: "s" }] } });
    }
    const { n, longest } = handle.sqlite.prepare("select count(*) as n, max(length(query)) as longest from recall_events").get() as { n: number; longest: number };
    expect(n).toBeLessThanOrEqual(200);
    expect(longest).toBeLessThanOrEqual(500);
    const orphanHits = handle.sqlite.prepare("select count(*) from recall_event_hits where event_id not in (select id from recall_events)").pluck().get();
    expect(orphanHits).toBe(0);
  });
});

describe("audit details", () => {
  it("larger than DUALMIND_AUDIT_DETAIL_MAX_BYTES are stored cut and marked, and the chain still verifies", () => {
    const row = appendAudit({ actor: "agent:big", action: "test.big", target: "x", details: { text: "y".repeat(200_000) } });
    expect(Buffer.byteLength(row.details ?? "")).toBeLessThanOrEqual(1024);
    expect(JSON.parse(row.details ?? "{}")).toMatchObject({ truncated: true, bytes: expect.any(Number) });
    expect(verifyAuditChain().ok).toBe(true);
  });
});

describe.skipIf(!fs.existsSync(QUERY_BUDGET_EXTENSION))("the query budget functions", () => {
  it("cannot be called from a trigger stored in a database file (SQLITE_DIRECTONLY)", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dm-directonly-")), "index.db");
    const db = new Database(file);
    try {
      expect(loadQueryBudget({ sqlite: db }).available).toBe(true);
      db.exec("create table t (x); create table log (y); create trigger arm_on_insert after insert on t begin insert into log select dualmind_budget_arm(1); end;");
      expect(() => db.prepare("insert into t values (1)").run()).toThrow(/unsafe use of dualmind_budget_arm/);
      // The app's own direct call still works.
      expect(db.prepare("select dualmind_budget_arm(1000)").get()).toBeDefined();
      db.prepare("select dualmind_budget_disarm()").get();
    } finally {
      db.close();
    }
  });
});
