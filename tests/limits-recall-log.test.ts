import Database from "better-sqlite3";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyPragmas, getStoreDb, loadVectorExtension } from "@/lib/db/connection";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import { recallBackend } from "@/lib/recall/backend";
import { RECALL_LOG_SUMMARY_CHARS } from "@/lib/recall/events";
import { onPg, seedStore, seedToken, seedTrace, storeSql, useTestBackend, type TestEnv } from "./backend";
import { callRoute, migrationsUpTo } from "./helpers";

/**
 * The recall log is bounded by bytes, not only by rows: a read token's recalls
 * with many long hits keep the log under DUALMIND_RECALL_LOG_MAX_BYTES while
 * the newest recalls stay, with their hits, as the dashboard shows them.
 */
const LIMIT = 256 * 1024;
let env: TestEnv;
let reader = "";

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_RECALL_LOG_MAX_BYTES: String(LIMIT) });
  await seedStore("recall-log");
  reader = await seedToken({ label: "r", agent_id: "log-reader", scopes: ["read"] });
  const words = (i: number, n: number) => Array.from({ length: n }, (_, j) => `common${j % 7} word${(i * 31 + j) % 97}`).join(" ");
  for (let i = 0; i < 50; i++) {
    await seedTrace("recall-log", {
      intent: { verb: "fix", target: `common target ${words(i, 12)}` },
      shard_type: "code",
      key_files: Array.from({ length: 20 }, (_, j) => `src/f${j}_${i}.ts`),
      outcome: "failure",
      key_issue: `common issue ${words(i, 120)}`,
      error_tags: Array.from({ length: 12 }, (_, j) => `t${j}`),
    });
  }
});
afterAll(async () => env?.cleanup());

const logBytes = async () => {
  const [row] = await storeSql<{ n: unknown; bytes: unknown; hits: unknown; longest: unknown }>(
    "recall-log",
    "select count(*) as n, coalesce(sum(bytes), 0) as bytes, (select count(*) from recall_event_hits) as hits, (select coalesce(max(length(summary)), 0) from recall_event_hits) as longest from recall_events",
  );
  return { events: Number(row.n), bytes: Number(row.bytes), hits: Number(row.hits), longest: Number(row.longest) };
};

describe("DUALMIND_RECALL_LOG_MAX_BYTES", () => {
  it("many large recalls by a read token keep the log under the limit, the newest recalls kept with their hits", async () => {
    const eventIds: number[] = [];
    let hitsSeen = 0;
    for (let i = 0; i < 40; i++) {
      const r = await callRoute(recallRoute.POST, { token: reader, params: { store: "recall-log" }, body: { query: `common target issue fix common${i % 7} q${i}`, top_k: 50, min_score: 0 } });
      expect(r.status).toBe(200);
      eventIds.push(r.json.event_id as number);
      hitsSeen += (r.json.traces as unknown[]).length;
      const log = await logBytes();
      expect(log.bytes).toBeLessThanOrEqual(LIMIT);
    }
    // The recalls were large: together far more than the limit, so the log really was trimmed.
    expect(hitsSeen / 40).toBeGreaterThan(20);
    const log = await logBytes();
    expect(log.events).toBeLessThan(40);
    expect(log.events).toBeGreaterThan(3);
    expect(log.longest).toBeLessThanOrEqual(RECALL_LOG_SUMMARY_CHARS);
    // Every kept event's counted bytes include its hits' summaries; no hit outlives its event.
    const [orphans] = await storeSql<{ n: unknown }>("recall-log", "select count(*) as n from recall_event_hits where event_id not in (select id from recall_events)");
    expect(Number(orphans.n)).toBe(0);
    // What the dashboard shows: the newest recalls, newest first, with their hits, and the last one opens.
    const recent = await recallBackend().listRecentRecalls({ store: "recall-log", limit: 5 });
    expect(recent.map((e) => e.id)).toEqual(eventIds.slice(-5).reverse());
    expect(recent[0].hits.length).toBeGreaterThan(20);
    const last = await recallBackend().getRecall({ store: "recall-log", id: eventIds.at(-1)! });
    expect(last.hits.length).toBe(recent[0].hits.length);
  });

  it.skipIf(onPg)("SQLite: the pages the log really takes stay within twice the limit", async () => {
    const [row] = await storeSql<{ b: unknown }>("recall-log", "select coalesce(sum(pgsize), 0) as b from dbstat where name like 'recall_event%'");
    expect(Number(row.b)).toBeLessThanOrEqual(2 * LIMIT);
  });

  it.skipIf(onPg)("SQLite: a log written before the byte count gets each event's bytes and running sum when the store opens", async () => {
    const dir = path.join(env.dataDir, "stores", "old-log");
    fs.mkdirSync(path.join(dir, "memory"), { recursive: true });
    const sqlite = new Database(path.join(dir, "index.db"));
    applyPragmas(sqlite);
    loadVectorExtension(sqlite);
    migrate(drizzle(sqlite), { migrationsFolder: migrationsUpTo({ which: "index", last: "0019_store_usage", scratch: fs.mkdtempSync(path.join(os.tmpdir(), "dm-recall-log-")) }) });
    const event = sqlite.prepare("insert into recall_events (agent_id, query, mode, latency_ms, cache_hit, hit_count, warning, created_at) values ('a', ?, 'lexical', 1, 0, 2, 0, 1) returning id");
    const hit = sqlite.prepare("insert into recall_event_hits (event_id, rank, artifact, ref_id, score, summary) values (?, ?, 'trace', 1, 0.5, ?)");
    for (const q of ["first", "second"]) {
      const { id } = event.get(q) as { id: number };
      hit.run(id, 1, "s".repeat(100));
      hit.run(id, 2, "t".repeat(50));
    }
    sqlite.close();
    const rows = getStoreDb({ store: "old-log" }).sqlite.prepare("select query, bytes, bytes_through from recall_events order by id").all();
    // 128 + agent (1) + query + two hits of 64 + their summaries (100 and 50).
    const first = 128 + 1 + 5 + 64 + 100 + 64 + 50;
    const second = 128 + 1 + 6 + 64 + 100 + 64 + 50;
    expect(rows).toEqual([
      { query: "first", bytes: first, bytes_through: first },
      { query: "second", bytes: second, bytes_through: first + second },
    ]);
  });
});
