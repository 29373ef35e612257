/**
 * Reflection recall, one run, side by side:
 * 1. Quality: 50 traces and 50 paraphrased queries with known targets
 *    (tests/fixtures/recall-quality.ts), builtin provider:
 *    hit rate@5, MRR@5, precision of what the min_score gate lets through, and
 *    a min_score sweep (the default gate and the lexical scale are chosen from it),
 *    for hybrid, vector-only and lexical-only signals.
 * 2. Latency of POST /recall's domain call at 10k and 100k traces, cold
 *    (query not seen before) and query-cache hit, hybrid, vector-only and lexical,
 *    against the design budget (+150 ms cache hit, +400 ms cold).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { openStore } from "../lib/stores/stores";
import { resetEmbedderForTests } from "../lib/embed/model";
import { drainEmbedQueues } from "../lib/embed/worker";
import { sqliteRecall } from "../lib/recall/engines/sqlite";
import { lexicalTerms, recallInputSchema, recallPool, recallQueryText, recallReflections, type RecallInput } from "../lib/recall/recall";
import { ftsLegFirstSight } from "./fts-leg";
import type { StoreHandle } from "../lib/db/connection";
import { clearQueryVectorCache } from "../lib/embed/query";
import { getReflectionSettings } from "../lib/recall/settings";
import { recordTrace, TRACE_KIND } from "../lib/recall/traces";
import { LEARNING_KIND } from "../lib/recall/learnings";
import { buildAnnIndexes } from "./ann-warm";
import { QUALITY_CASES } from "../tests/fixtures/recall-quality";
import { OBJECTS, QUALIFIERS, syntheticTrace, VERBS } from "./side-by-side-data";
import { percentile, printTable } from "./table";

const K = 5;
/** The full-text leg's first-sight rows (lexicalLegFirstSight), printed after the latency table. */
const legRows: Record<string, string | number>[] = [];
const LATENCY_QUERIES = 100;
const CHUNK = 1000;

type Ranked = { kind: "overlap" | "synonym"; target: number; hits: { id: number; score: number }[] };

const SIGNALS = ["hybrid", "vector", "lexical"] as const;
const SIGNAL_LABELS: Record<(typeof SIGNALS)[number], string> = { hybrid: "hybrid (vector + FTS5)", vector: "vector only (builtin)", lexical: "lexical only (FTS5)" };

/** Every quality query once per signal set, ungated (top 5 with scores): gates are applied afterwards, so one run serves every threshold. */
async function rankQualityQueries(): Promise<Record<(typeof SIGNALS)[number], Ranked[]>> {
  const h = getStoreDb({ store: "quality" });
  const ids = QUALITY_CASES.map((c) => recordTrace({ handle: h, agentId: "bench", input: c.trace }).trace.id);
  await drainEmbedQueues({ stores: ["quality"], batchSize: 256 });
  const run = async (signals: (typeof SIGNALS)[number]) => {
    const out: Ranked[] = [];
    for (const [i, c] of QUALITY_CASES.entries()) {
      const r = await recallReflections({ engine: sqliteRecall, handle: openStore({ store: "quality" }), agentId: "bench", input: { query: c.query, top_k: K, min_score: 0, kinds: ["trace"], signals } });
      out.push({ kind: c.kind, target: ids[i], hits: r.traces.map((t) => ({ id: t.id, score: t.score })) });
    }
    return out;
  };
  return { hybrid: await run("hybrid"), vector: await run("vector"), lexical: await run("lexical") };
}

function qualityAt(ranked: Ranked[], minScore: number) {
  let hits = 0;
  let rr = 0;
  let returned = 0;
  let relevant = 0;
  for (const r of ranked) {
    const pos = r.hits.findIndex((x) => x.id === r.target);
    if (pos >= 0) {
      hits++;
      rr += 1 / (pos + 1);
    }
    const gated = r.hits.filter((x) => x.score >= minScore);
    returned += gated.length;
    if (gated.some((x) => x.id === r.target)) relevant++;
  }
  const n = ranked.length;
  return { hitAt5: hits / n, mrr: rr / n, precision: returned ? relevant / returned : 0, gatedRecall: relevant / n, perQuery: returned / n };
}

async function qualityTables(): Promise<void> {
  const ranked = await rankQualityQueries();
  const minScore = getReflectionSettings({ handle: openStore({ store: "quality" }) }).min_score;
  const rows: Record<string, string | number>[] = [];
  for (const mode of SIGNALS) {
    for (const subset of ["all", "overlap", "synonym"] as const) {
      const set = ranked[mode].filter((r) => subset === "all" || r.kind === subset);
      const q = qualityAt(set, minScore);
      rows.push({
        signals: SIGNAL_LABELS[mode],
        queries: `${subset} (${set.length})`,
        "hit@5": q.hitAt5,
        "MRR@5": q.mrr,
        [`precision (score ≥ ${minScore})`]: q.precision,
        "target passes the gate": q.gatedRecall,
        "hits returned / query": q.perQuery,
      });
    }
  }
  printTable("Recall quality: 50 paraphrased queries, builtin provider (k = 5, store defaults)", rows);
  const sweep: Record<string, string | number>[] = [];
  for (const t of [0.1, 0.15, 0.2, 0.25, 0.3, 0.4]) {
    const row: Record<string, string | number> = { min_score: t };
    for (const mode of SIGNALS) {
      const q = qualityAt(ranked[mode], t);
      row[`${mode} precision`] = q.precision;
      row[`${mode} target passes`] = q.gatedRecall;
    }
    sweep.push(row);
  }
  printTable("min_score sweep over all 50 queries (precision of returned hits; share of queries whose target is returned)", sweep);
}

/** Recall's full-text leg over traces on words seen for the first time (bench/fts-leg.ts), on other intent combinations than the latency queries. */
export function lexicalLegFirstSight({ handle, traces }: { handle: StoreHandle; traces: number }): Record<string, string | number>[] {
  const queries = Array.from({ length: LATENCY_QUERIES }, (_, q) => lexicalTerms(recallQueryText(recallInputSchema.parse({ intent: { verb: VERBS[(q * 4) % VERBS.length], target: `${OBJECTS[(q * 11) % OBJECTS.length]} ${QUALIFIERS[(q * 3) % QUALIFIERS.length]}` } }))));
  return ftsLegFirstSight({ db: handle.sqlite, table: "reasoning_traces_fts", queries, k: recallPool(getReflectionSettings({ handle }).top_k) }).map((r) => ({ traces, ...r }));
}

async function latencyRows(): Promise<Record<string, string | number>[]> {
  const rows: Record<string, string | number>[] = [];
  legRows.length = 0;
  let have = 0;
  const store = "latency";
  const h = getStoreDb({ store });
  // Every trace gets a vector: the worker drains after each chunk, as it would run beside the writers
  // (the run's DUALMIND_EMBED_BACKLOG_WATERMARK is far above a chunk, so no trace skips embedding).
  let writeMs = 0;
  let embedMs = 0;
  let embedded = 0;
  // BENCH_RECALL_SIZES: a comma list of trace counts (default 10000,100000), grown in order.
  for (const n of (process.env.BENCH_RECALL_SIZES ?? "10000,100000").split(",").map(Number).sort((a, b) => a - b)) {
    while (have < n) {
      const startedWrite = performance.now();
      for (const end = have + CHUNK; have < end; have++) recordTrace({ handle: h, agentId: "bench", input: syntheticTrace(have) });
      writeMs += performance.now() - startedWrite;
      const startedEmbed = performance.now();
      embedded += (await drainEmbedQueues({ stores: [store], batchSize: 1024 })).embedded;
      embedMs += performance.now() - startedEmbed;
    }
    const annStarted = performance.now();
    const annVectors = await buildAnnIndexes({ handle: h, kinds: [TRACE_KIND, LEARNING_KIND] });
    process.stderr.write(`recall bench: HNSW index over ${annVectors} vectors ready in ${((performance.now() - annStarted) / 1000).toFixed(1)} s\n`);
    const queries: RecallInput[] = Array.from({ length: LATENCY_QUERIES }, (_, q) => ({
      intent: { verb: VERBS[q % VERBS.length], target: `${OBJECTS[(q * 7) % OBJECTS.length]} ${QUALIFIERS[q % QUALIFIERS.length]}` },
    }));
    const measure = async (label: string, opts: { signals: (typeof SIGNALS)[number]; warm: boolean }) => {
      clearQueryVectorCache();
      if (opts.warm) for (const q of queries) await recallReflections({ engine: sqliteRecall, handle: openStore({ store }), agentId: "bench", input: { ...q, signals: opts.signals } });
      const t: number[] = [];
      for (const q of queries) {
        const s = performance.now();
        await recallReflections({ engine: sqliteRecall, handle: openStore({ store }), agentId: "bench", input: { ...q, signals: opts.signals } });
        t.push(performance.now() - s);
      }
      const budget = opts.signals === "lexical" ? "-" : opts.warm ? 150 : 400;
      const p95 = percentile(t, 95);
      rows.push({ traces: n, path: label, "p50 ms": percentile(t, 50), "p95 ms": p95, "budget ms": budget, "within budget": budget === "-" ? "-" : p95 <= budget ? "yes" : "NO" });
    };
    await measure("hybrid, cold (query embedded)", { signals: "hybrid", warm: false });
    await measure("hybrid, query-cache hit", { signals: "hybrid", warm: true });
    await measure("vector only, cold", { signals: "vector", warm: false });
    await measure("vector only, query-cache hit", { signals: "vector", warm: true });
    await measure("lexical (the fallback path)", { signals: "lexical", warm: false });
    legRows.push(...lexicalLegFirstSight({ handle: h, traces: n }));
    process.stderr.write(`recall bench: ${n} traces written in ${(writeMs / 1000).toFixed(1)} s in total, ${embedded} embedded by the worker in ${(embedMs / 1000).toFixed(1)} s\n`);
  }
  return rows;
}

export default async function run() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-recall-"));
  process.env.DATA_DIR = dataDir;
  process.env.DUALMIND_LOG_LEVEL = "warn";
  // The bench loads 100k traces at once; recall must not count that as a degraded backlog.
  process.env.DUALMIND_EMBED_BACKLOG_WATERMARK = "1000000";
  resetConfigForTests();
  resetEmbedderForTests();
  try {
    await qualityTables();
    printTable("Recall latency (recallReflections end to end: readiness, query embedding, KNN and/or FTS5 over traces + learnings, gate, event log)", await latencyRows());
    printTable("Recall's full-text leg over traces on words never seen before (every cache cleared before each call)", legRows);
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
