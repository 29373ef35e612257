/**
 * Hidden items beside the ones that answer (governed memory, lib/index/item-state.ts): a store of N searchable
 * memories and N traces (BENCH_HIDDEN_N, default 2,000), then H more of each written with the same vocabulary (so they
 * match the same queries) and hidden (H = BENCH_HIDDEN_SIZES, default 0,1000,20000: half proposals, half retired).
 * search (fts, hybrid: memory documents) and recall (lexical, hybrid: traces) p50/p95 over the same queries at each H,
 * on SQLite, in process, builtin embedder. What it watches: a filter whose cost grows with H, not with the page.
 */
import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { getStoreDb } from "../lib/db/connection";
import { sqlRun, write } from "../lib/db/port";
import { drainEmbedQueues } from "../lib/embed/worker";
import { reindexStore } from "../lib/index/reindex";
import { searchInputSchema } from "../lib/index/search";
import { recallBackend } from "../lib/recall/backend";
import { recordTrace } from "../lib/recall/traces";
import { stores } from "../lib/stores/backend";
import { OBJECTS, QUALIFIERS, syntheticTrace, VERBS } from "./side-by-side-data";
import { scratchStore } from "./search-eval";
import { percentile, printTable } from "./table";

const STORE = "hidden";
const N = Number(process.env.BENCH_HIDDEN_N ?? 2_000);
const SIZES = (process.env.BENCH_HIDDEN_SIZES ?? "0,1000,20000").split(",").map(Number).sort((a, b) => a - b);
const QUERIES = 50;
const BATCH = 2_000;

/** A memory's body: the words of trace `i` (the same vocabulary every query draws from). */
function memoryBody(i: number): string {
  const t = syntheticTrace(i);
  return `# ${t.intent.verb} ${t.intent.target}\n\n${t.intent.verb} the ${t.intent.target} (${t.shard_type}): ${t.key_issue}. Files: ${(t.key_files ?? []).join(", ")}.\n`;
}

/** Items `from` ≤ i < `to` of each kind written; with `hide`, their item_state rows too (half proposed, half retired). */
async function writeItems({ dataDir, from, to, hide }: { dataDir: string; from: number; to: number; hide: boolean }): Promise<void> {
  const h = getStoreDb({ store: STORE });
  const dir = path.join(dataDir, "stores", STORE, "memory", "notes");
  fs.mkdirSync(dir, { recursive: true });
  const traceIds: number[] = [];
  for (let i = from; i < to; i++) {
    fs.writeFileSync(path.join(dir, `n${i}.md`), memoryBody(i));
    traceIds.push(recordTrace({ handle: h, agentId: "bench", input: syntheticTrace(i) }).trace.id);
  }
  reindexStore({ handle: h });
  await drainEmbedQueues({ stores: [STORE], batchSize: 1024 });
  if (!hide) return;
  const now = Date.now();
  const items = [...Array.from({ length: to - from }, (_, k) => ["memory", `notes/n${from + k}`] as const), ...traceIds.map((id) => ["trace", String(id)] as const)];
  for (let at = 0; at < items.length; at += BATCH) {
    const values = items.slice(at, at + BATCH).map(([kind, id], k) => sql`(${kind}, ${id}, ${k % 2 === 0 ? "proposed" : "retired"}, ${now}, ${now})`);
    await write(h, sqlRun(sql`insert into item_state (kind, item_id, status, recorded_at, updated_at) values ${sql.join(values, sql`, `)}`));
  }
}

/** Query `q`'s verb and object: a distinct pair for each of the QUERIES + 1 queries. */
const wordsOf = (q: number) => ({ verb: VERBS[q % VERBS.length], object: OBJECTS[(q * 7 + Math.floor(q / VERBS.length)) % OBJECTS.length] });

/** p50/p95 of `run` over the queries (one warm-up first) and the mean number of answers. */
async function timed(run: (q: number) => Promise<number>): Promise<{ p50: number; p95: number; answers: number }> {
  await run(QUERIES);
  const t: number[] = [];
  let answers = 0;
  for (let q = 0; q < QUERIES; q++) {
    const s = performance.now();
    answers += await run(q);
    t.push(performance.now() - s);
  }
  return { p50: percentile(t, 50), p95: percentile(t, 95), answers: answers / QUERIES };
}

export default async function hiddenItems(): Promise<void> {
  const scratch = scratchStore({ store: STORE });
  try {
    const rows: Record<string, string | number>[] = [];
    let have = N;
    await writeItems({ dataDir: scratch.dataDir, from: 0, to: N, hide: false });
    for (const hidden of SIZES) {
      if (N + hidden > have) await writeItems({ dataDir: scratch.dataDir, from: have, to: N + hidden, hide: true });
      have = N + hidden;
      const search = (mode: "fts" | "hybrid") => async (q: number) => {
        const { verb, object } = wordsOf(q);
        return (await stores().search({ store: STORE, input: searchInputSchema.parse({ q: `${verb} ${object}`, mode, limit: 10 }) })).results.length;
      };
      const recall = (signals: "lexical" | "hybrid") => async (q: number) => {
        const { verb, object } = wordsOf(q);
        return (await recallBackend().recall({ store: STORE, agentId: "bench", input: { intent: { verb, target: `${object} ${QUALIFIERS[q % QUALIFIERS.length]}` }, signals, kinds: ["trace"] } })).traces.length;
      };
      for (const [route, run] of [
        ["search fts", search("fts")],
        ["search hybrid", search("hybrid")],
        ["recall lexical", recall("lexical")],
        ["recall hybrid", recall("hybrid")],
      ] as const) {
        const t = await timed(run);
        rows.push({ "hidden items": hidden, route, "p50 ms": t.p50, "p95 ms": t.p95, "answers / query": t.answers });
      }
    }
    printTable(`Search and recall beside hidden items (SQLite, ${N} memories and ${N} traces that answer, H more of each hidden: half proposals, half retired; ${QUERIES} queries each, builtin embedder)`, rows);
  } finally {
    scratch.cleanup();
  }
}
