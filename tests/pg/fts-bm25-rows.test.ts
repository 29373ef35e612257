import { pgEngine, SQLITE_ENGINE } from "@/lib/db/engine";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { rowsOf, withStoreTx, type PgStoreHandle } from "@/lib/db/pg-store";
import { graphOn, type GraphBackend } from "@/lib/graph/backend";
import { backfillRowTermsPg, LEARNING_WORDS, NODE_WORDS, rowsTopBm25Pg, THOUGHT_WORDS, TRACE_WORDS, type RowWordTable } from "@/lib/index/engines/pg-words";
import { recallOn, type RecallBackend } from "@/lib/recall/backend";
import { matchExpression } from "@/lib/retrieval/match";
import { storesOn, type StoresBackend } from "@/lib/stores/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

/**
 * Remember's and recall's full-text legs rank on PostgreSQL as on SQLite: the
 * same thoughts, nodes, traces and learnings, written through each backend's
 * own writers, give the same rows in the same order with the same bm25 scores
 * (FTS5's, from token counts stored at write time), through updates and
 * deletes; rows written before those counts are backfilled, and ranked by
 * ts_rank meanwhile.
 */

type Backend = StoresBackend & GraphBackend & RecallBackend;

const THOUGHTS = [
  "nginx returned 502 bad gateway right after the certificate renewal",
  "reloading nginx picked up the renewed certificate and fixed the 502",
  "grafana dashboards load slowly on monday mornings",
  "the proxy timeout was raised to sixty seconds for slow uploads",
  "certificate renewal runs nightly through certbot and reloads the proxy",
  "slow queries on the reports page came from a missing index",
  "nginx nginx nginx config test before every reload",
  "a bad gateway means the upstream did not answer in time",
  "upload timeouts traced to the proxy buffering large bodies",
  "dashboards for the proxy show the 502 rate per upstream",
  "monday deploys are frozen after the certificate outage",
  "the index on reports fixed slow dashboards too",
];

const NODES: { name: string; entity_type: "system" | "tool" | "concept"; display_name?: string; tags?: string[] }[] = [
  { name: "nginx", entity_type: "system", tags: ["proxy", "gateway"] },
  { name: "certbot", entity_type: "tool", display_name: "Certbot certificate renewal", tags: ["certificate"] },
  { name: "grafana", entity_type: "system", display_name: "Grafana dashboards", tags: ["dashboards", "monitoring"] },
  { name: "reports page", entity_type: "system", tags: ["slow", "index"] },
  { name: "bad gateway", entity_type: "concept", display_name: "502 bad gateway", tags: ["proxy", "upstream"] },
  { name: "upload", entity_type: "concept", tags: ["timeout", "proxy", "buffering"] },
];

const TRACES = [
  { verb: "repair", target: "login flow", issue: "session cookie dropped behind the proxy", tags: ["cookie", "proxy"] },
  { verb: "repair", target: "upload form", issue: "proxy timeout on large uploads", tags: ["timeout", "proxy"] },
  { verb: "add", target: "dashboard panel", issue: "grafana query too slow for the panel", tags: ["grafana"] },
  { verb: "repair", target: "certificate renewal", issue: "certbot could not reload nginx", tags: ["certificate", "nginx"] },
  { verb: "optimize", target: "reports query", issue: "missing index made reports slow", tags: ["index", "slow"] },
  { verb: "repair", target: "session store", issue: "cookie expired before the session did", tags: ["cookie", "session"] },
];

const LEARNINGS = [
  { predicate: "reload_after_renewal", description: "reload nginx after certbot renews a certificate" },
  { predicate: "raise_proxy_timeout", description: "raise the proxy timeout for slow uploads" },
  { predicate: "index_reports", description: "index the reports table to keep the reports page fast" },
  { predicate: "cookie_behind_proxy", description: "set the secure cookie flag when behind a proxy" },
  { predicate: "watch_dashboards", description: "watch grafana dashboards on monday mornings" },
];

const QUERIES: Record<string, string[][]> = {
  thoughts: [["nginx", "502"], ["certificate", "renewal", "reload"], ["slow", "dashboards"], ["proxy", "timeout", "upload"], ["the"], ["zeppelin", "proxy"]],
  kg_node: [["proxy"], ["certificate", "renewal"], ["dashboards", "grafana"], ["slow", "index", "gateway"]],
  reasoning_traces: [["proxy", "cookie"], ["slow"], ["certificate", "nginx", "reload"], ["repair", "session"]],
  learnings: [["proxy"], ["reports", "index"], ["nginx", "certificate", "reload"], ["slow", "dashboards", "monday"]],
};

const TABLES: RowWordTable[] = [THOUGHT_WORDS, NODE_WORDS, TRACE_WORDS, LEARNING_WORDS];

let pg: PgHandle;
let lite: Backend;
let post: Backend;
let handle: PgStoreHandle;
let cleanup: () => void;

async function seed(b: Backend): Promise<void> {
  await b.createStore({ input: { name: "kb" }, actor: "test" });
  for (const [i, content] of THOUGHTS.entries()) await b.think({ store: "kb", input: { content, framework: "debug", timestamp: 1_790_000_000_000 + i }, actor: "seed" });
  for (const n of NODES) await b.createNode({ store: "kb", input: n, actor: "seed" });
  for (const t of TRACES) {
    await b.recordTrace({ store: "kb", agentId: "agent-1", input: { intent: { verb: t.verb, target: t.target }, shard_type: "ops", key_files: [], outcome: "failure", key_issue: t.issue, error_tags: t.tags } });
  }
  for (const l of LEARNINGS) await b.recordLearning({ store: "kb", agentId: "agent-1", input: l });
}

beforeAll(async () => {
  cleanup = useTempDataDir({ DUALMIND_DISABLE_VECTORS: "true" }).cleanup;
  pg = await openPgHandle({ url: await createTestDatabase(), max: 4 });
  lite = { ...storesOn(SQLITE_ENGINE), ...graphOn(SQLITE_ENGINE), ...recallOn(SQLITE_ENGINE) };
  post = { ...storesOn(pgEngine(pg)), ...graphOn(pgEngine(pg)), ...recallOn(pgEngine(pg)) };
  await seed(lite);
  await seed(post);
  handle = await openStorePg({ pg, store: "kb" });
});
afterAll(async () => {
  await closePgHandle(pg);
  cleanup();
});

/** A row's text, as both backends store it (ids are each backend's own). */
const textSql = (t: RowWordTable) => t.text.map((c) => `coalesce(${c}, '')`).join(" || ' | ' || ");

/** SQLite's FTS5: `select rowid, bm25(t_fts) … match <any> order by rank, rowid limit 10`, each row named by its text with its score. */
function sqliteTop(t: RowWordTable, words: string[]): string[] {
  const db = getStoreDb({ store: "kb" }).sqlite;
  const rows = db
    .prepare(`select f.rowid as rid, -bm25(${t.table}_fts) as score from ${t.table}_fts f where ${t.table}_fts match ? order by rank, f.rowid limit 10`)
    .all(matchExpression(words, "any")) as { rid: number; score: number }[];
  const text = db.prepare(`select ${textSql(t)} as text from ${t.table} where ${t.key} = ?`);
  return rows.map((r) => `${(text.get(r.rid) as { text: string }).text} ${r.score.toFixed(4)}`);
}

/** The PostgreSQL leg's top 10 (rowsTopBm25Pg), named the same way; null while the statistics are being built. */
async function pgTop(t: RowWordTable, words: string[]): Promise<string[] | null> {
  return withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const top = await rowsTopBm25Pg({ tx, table: t, words, k: 10 });
    if (top.kind !== "ranked") return null;
    const texts = await rowsOf<{ rid: string; text: string }>({ tx, query: sql`select ${sql.identifier(t.key)}::text as rid, ${sql.raw(textSql(t))} as text from ${sql.identifier(t.table)}` });
    const byId = new Map(texts.map((r) => [Number(r.rid), r.text]));
    return top.hits.map((h) => `${byId.get(h.rid)} ${h.score.toFixed(4)}`);
  } });
}

async function expectSameRanking(): Promise<void> {
  for (const t of TABLES) {
    for (const words of QUERIES[t.tbl]) {
      const want = sqliteTop(t, words);
      expect(await pgTop(t, words), `${t.tbl}: ${words.join(" ")}`).toEqual(want);
    }
  }
}

describe("remember's and recall's full-text legs on PostgreSQL rank as SQLite's FTS5", () => {
  it("gives the same rows, order and bm25 scores (to 4 decimals) for thoughts, nodes, traces and learnings", async () => {
    // The fixture is not degenerate: each table has queries matching several rows with distinct scores.
    for (const t of TABLES) expect(sqliteTop(t, QUERIES[t.tbl][0]).length, t.tbl).toBeGreaterThan(1);
    await expectSameRanking();
  });

  it("stays equal through an update of a node's text and the delete of a thought and a node", async () => {
    for (const b of [lite, post]) {
      const { nodes } = await b.listNodes({ store: "kb", filter: { q: "certbot" } });
      const certbot = nodes.find((n) => n.name === "certbot")!;
      await b.updateNode({ store: "kb", id: certbot.id, input: { display_name: "Certbot, the proxy's certificate robot", tags: ["proxy", "renewal"] } });
      const grafana = (await b.listNodes({ store: "kb", filter: { q: "grafana" } })).nodes.find((n) => n.name === "grafana")!;
      await b.deleteNode({ store: "kb", id: grafana.id, actor: "test" });
      const { thoughts } = await b.listThoughts({ store: "kb", filter: { q: "monday deploys" } });
      await b.deleteThought({ store: "kb", id: thoughts.find((x) => x.content.startsWith("monday deploys"))!.id, actor: "test" });
    }
    expect(sqliteTop(NODE_WORDS, ["proxy"]).some((r) => r.startsWith("certbot"))).toBe(true);
    await expectSameRanking();
  });

  it("backfills rows written before the statistics, answering remember and recall by ts_rank meanwhile", async () => {
    // A store from before the statistics: no token counts, every row's length unknown.
    await withStoreTx({ handle, work: async (tx) => {
      for (const t of TABLES) {
        await tx.execute(sql`delete from word_postings where tbl = ${t.tbl}`);
        await tx.execute(sql`delete from word_terms where tbl = ${t.tbl}`);
        await tx.execute(sql`update word_totals set rows = 0, tokens = 0 where tbl = ${t.tbl}`);
        await tx.execute(sql`update ${sql.identifier(t.table)} set fts_len = null`);
      }
    } });
    for (const t of TABLES) expect(await pgTop(t, QUERIES[t.tbl][0]), t.tbl).toBeNull();
    // Remember and recall still answer, by the old ranking.
    const remembered = await post.remember({ store: "kb", input: { query: "nginx 502", kinds: ["thought"] } });
    expect(remembered.results.length).toBeGreaterThan(0);
    const recalled = await post.recall({ store: "kb", agentId: "agent-1", input: { query: "proxy cookie", signals: "lexical" } });
    expect(recalled.traces.length).toBeGreaterThan(0);
    // Resumable, a batch per transaction (alongside the backfills those answers started: rows they hold are skipped).
    for (const t of TABLES) await backfillRowTermsPg({ handle, table: t, batch: 2 });
    const pending = () =>
      withStoreTx({ handle, readOnly: true, work: async (tx) => {
        let n = 0;
        for (const t of TABLES) n += (await rowsOf<{ n: number }>({ tx, query: sql`select count(*)::int as n from ${sql.identifier(t.table)} where fts_len is null` }))[0].n;
        return n;
      } });
    await expect.poll(pending, { timeout: 10_000 }).toBe(0);
    await expectSameRanking();
  });
});
