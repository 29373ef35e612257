/**
 * Fused remember at 10k and 100k thoughts (nodes half as many; builtin
 * embedder, every vector written by the real worker), with and without core.
 * Seeding goes through the domain functions (thinkThought, createNode,
 * createFrame, createOrMergeRelation, linkEvidence), so write costs are
 * reported too. Each size gets its own DATA_DIR; core is seeded at 10k only
 * (at 100k a second store would double the seed and push the bench past its
 * ~5 minute budget), so "store + core" has no 100k row.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { getConfig, resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb, type StoreHandle } from "../lib/db/connection";
import { openCoreFor, openStore } from "../lib/stores/stores";
import { ENTITY_TYPES, FRAME_COLUMNS } from "../lib/db/schema/graph";
import { resetEmbedderForTests } from "../lib/embed/model";
import { buildAnnIndexes } from "./ann-warm";
import { drainEmbedQueues } from "../lib/embed/worker";
import { linkEvidence } from "../lib/graph/evidence";
import { createFrame } from "../lib/graph/frames";
import { createNode } from "../lib/graph/nodes";
import { createOrMergeRelation } from "../lib/graph/relations";
import { sqliteRemember } from "../lib/graph/engines/sqlite";
import { rememberByQuery } from "../lib/graph/remember";
import { thinkThought } from "../lib/graph/thoughts";
import { THOUGHT_KIND } from "../lib/graph/thoughts";
import { NODE_KIND } from "../lib/graph/nodes";
import { knnSourceOf } from "../lib/embed/vector-index";
import { startQueryBudget } from "../lib/db/query-budget";
import { broadTopWithinBudget, matchExpression, matchTerms, planQueryVector, selectiveTopByBm25, vectorNeighbours } from "../lib/retrieval";
import { loadTextWindows } from "./corpus";
import { percentile, printTable } from "./table";
import { ftsLegFirstSight } from "./fts-leg";

const ALL_SIZES = [
  { thoughts: 10_000, stores: ["bench", "core"] },
  { thoughts: 100_000, stores: ["bench"] },
] as const;
/** BENCH_GRAPH_SIZES=100000 runs one size alone (a re-run of the large tail without the 10k seed). */
const SIZES = process.env.BENCH_GRAPH_SIZES ? ALL_SIZES.filter((s) => process.env.BENCH_GRAPH_SIZES!.split(",").map(Number).includes(s.thoughts)) : ALL_SIZES;
const RELATIONS_PER_NODE = 2;
const QUERIES = 100;
/**
 * BENCH_GRAPH_KEEP=<dir> keeps each size's seeded, embedded store in <dir>/<size> and reuses it on the next
 * run (seeding 100k through the domain functions takes minutes), so before/after runs query the same store.
 */
const KEEP_DIR = process.env.BENCH_GRAPH_KEEP;
/** Writes per enclosing transaction while seeding: the domain functions nest theirs as savepoints. */
const SEED_BATCH = 1_000;

type Size = (typeof ALL_SIZES)[number];
type Seeded = { writeMs: number; writes: number; nodeNames: string[]; nodeIds: string[]; thoughtIds: string[] };
type Row = Record<string, string | number>;

// Deterministic pseudo-random numbers: the same graph on every run.
function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** Run `write(i)` for i in [0, n) in transactions of SEED_BATCH calls (one commit per batch, not per call). */
function inBatches(handle: StoreHandle, n: number, write: (i: number) => void): void {
  for (let start = 0; start < n; start += SEED_BATCH) {
    handle.sqlite.transaction(() => {
      for (let i = start; i < Math.min(n, start + SEED_BATCH); i++) write(i);
    })();
  }
}

function seedGraph({ handle, texts, offset, thoughts }: { handle: StoreHandle; texts: string[]; offset: number; thoughts: number }): Seeded {
  const nodes = thoughts / 2;
  const rand = rng(offset + 7);
  const started = performance.now();
  const thoughtIds: string[] = [];
  inBatches(handle, thoughts, (i) => {
    const t = thinkThought({ handle, input: { content: texts[(offset + i) % texts.length], framework: i % 5 === 0 ? "debug" : "conversation", chain_id: `chain-${i % 500}`, timestamp: 1_790_000_000_000 + i * 60_000 }, actor: "bench" });
    thoughtIds.push(t.id);
  });
  const nodeIds: string[] = [];
  const nodeNames: string[] = [];
  inBatches(handle, nodes, (i) => {
    const words = texts[(offset + thoughts + i) % texts.length].split(/\s+/).filter((w) => /^[A-Za-z]{4,}$/.test(w)).slice(0, 3);
    const name = `${words.join(" ") || "node"} ${i}`;
    const n = createNode({ handle, input: { name, entity_type: ENTITY_TYPES[i % ENTITY_TYPES.length] }, actor: "bench" });
    nodeIds.push(n.id);
    nodeNames.push(name);
    const f = createFrame({ handle, input: { node_id: n.id, column: FRAME_COLUMNS[i % FRAME_COLUMNS.length], properties: { note: texts[(offset + i * 3) % texts.length].slice(0, 120), state: i % 7 === 0 ? "down" : "up" } }, actor: "bench" });
    linkEvidence({ handle, input: { target: "frame", target_id: f.id, thought_id: thoughtIds[Math.floor(rand() * thoughtIds.length)] }, actor: "bench" });
  });
  let relations = 0;
  inBatches(handle, nodes, (i) => {
    for (let r = 0; r < RELATIONS_PER_NODE; r++) {
      const j = Math.floor(rand() * nodes);
      if (j === i) continue;
      createOrMergeRelation({ handle, input: { from_id: nodeIds[i], to_id: nodeIds[j], relationship_type: r === 0 ? "relates_to" : "depends_on", weight: Math.round(rand() * 100) / 100, confidence: 0.8 }, actor: "bench" });
      relations++;
    }
  });
  return { writeMs: performance.now() - started, writes: thoughts + 3 * nodes + relations, nodeNames, nodeIds, thoughtIds };
}

/**
 * Where remember's time goes, per query on the store alone: its full-text
 * leg (the same OR match, 25 candidates from thoughts_fts and kg_node_fts,
 * as remember runs it: max-score pruning first, then the word lists or FTS5
 * scoring every match; its agreement with the latter is reported), its vector leg (query embedding plus thought and
 * node KNN, 25 each) and the whole call; the rest is per-row work (loading
 * candidates, cosines, one-hop expansion, scoring).
 */
async function rememberSplit({ queries, thoughts }: { queries: { query: string }[]; thoughts: number }): Promise<Row> {
  const handle = openStore({ store: "bench" });
  const fts: number[] = [];
  const vec: number[] = [];
  const whole: number[] = [];
  let pruned = 0;
  let exact = 0;
  let overlap = 0;
  let compared = 0;
  for (const { query } of queries) {
    let t = performance.now();
    const terms = matchTerms(query, { maxTerms: 16 });
    const match = matchExpression(terms, "any");
    const answers: number[][] = [];
    if (match) {
      for (const table of ["thoughts_fts", "kg_node_fts"]) {
        const top = selectiveTopByBm25({ db: handle.sqlite, schema: "main", table, terms, k: 25 });
        if (top) {
          pruned++;
          if (top.exact) exact++;
          answers.push(top.rows.map((r) => r.rowid));
          continue;
        }
        const broad = broadTopWithinBudget({ db: handle.sqlite, schema: "main", table, match, budget: startQueryBudget({ hint: "" }) });
        answers.push(broad ? broad.top(25).map((r) => r.rowid) : (handle.sqlite.prepare(`select rowid from main.${table} where ${table} match ? order by bm25(${table}), rowid limit ?`).pluck().all(match, 25) as number[]));
      }
    }
    fts.push(performance.now() - t);
    // Agreement with FTS5 scoring every match (untimed): the share of its top 25 the leg returned.
    if (match) {
      for (const [i, table] of ["thoughts_fts", "kg_node_fts"].entries()) {
        const exhaustive = handle.sqlite.prepare(`select rowid from main.${table} where ${table} match ? order by bm25(${table}), rowid limit ?`).pluck().all(match, 25) as number[];
        const got = new Set(answers[i]);
        overlap += exhaustive.length ? exhaustive.filter((r) => got.has(r)).length / exhaustive.length : 1;
        compared++;
      }
    }
    t = performance.now();
    const plan = await planQueryVector({ handle, text: query });
    if (plan.ok) for (const kind of [THOUGHT_KIND, NODE_KIND]) vectorNeighbours({ sources: [{ store: handle.store, source: knnSourceOf(handle), fingerprintId: plan.fingerprint.id }], kind, query: plan.vector, k: 25, floor: 0 });
    vec.push(performance.now() - t);
    t = performance.now();
    await rememberByQuery({ engine: sqliteRemember, handle, core: null, input: { query } });
    whole.push(performance.now() - t);
  }
  return {
    thoughts,
    "remember p50 ms": percentile(whole, 50),
    "full-text leg p50 ms": percentile(fts, 50),
    "vector leg p50 ms": percentile(vec, 50),
    "rest (per-row work) p50 ms": Math.max(0, percentile(whole, 50) - percentile(fts, 50) - percentile(vec, 50)),
    "full-text leg p95 ms": percentile(fts, 95),
    "vector leg p95 ms": percentile(vec, 95),
    "full-text lists pruned (exact)": `${pruned} (${exact}) of ${compared}`,
    "full-text top-25 agreement": compared ? overlap / compared : 1,
  };
}

const CONFIGS = [
  { label: "store only", includeCore: false, weights: undefined },
  { label: "store only, semantic weight only", includeCore: false, weights: { episodic: 0, procedural: 0, relation: 0, conflict: 0 } },
  { label: "store only, graph-heavy weights (epi 0.3, proc 0.3, rel 0.4)", includeCore: false, weights: { episodic: 0.3, procedural: 0.3, relation: 0.4 } },
  { label: "store + core (read-only)", includeCore: true, weights: undefined },
];

/** remember's full-text leg over both tables (as rememberSplit runs it) on words seen for the first time (bench/fts-leg.ts). */
function rememberLegFirstSight({ queries, thoughts }: { queries: { query: string }[]; thoughts: number }): Row[] {
  const handle = openStore({ store: "bench" });
  const terms = queries.map(({ query }) => matchTerms(query, { maxTerms: 16 }));
  return ["thoughts_fts", "kg_node_fts"].flatMap((table) => ftsLegFirstSight({ db: handle.sqlite, table, queries: terms, k: 25 }).map((r) => ({ thoughts, ...r })));
}

/**
 * Known-item queries: a node's name (every 4th) or the opening words of a thought; the item should come back.
 * `salt` picks another set of items (the queries new to a process that has answered the first set).
 */
function knownItemQueries({ seeded, texts, thoughts, salt = 0 }: { seeded: Seeded; texts: string[]; thoughts: number; salt?: number }) {
  const nodes = thoughts / 2;
  return Array.from({ length: QUERIES }, (_, i) => {
    if (i % 4 === 0) {
      const j = (i * 131 + salt * 977) % nodes;
      return { query: seeded.nodeNames[j], expected: seeded.nodeIds[j] };
    }
    const j = (i * 7919 + salt * 3331) % thoughts;
    return { query: texts[j].split(/\s+/).slice(0, 8).join(" "), expected: seeded.thoughtIds[j] };
  });
}

async function measureRemember({ cfg, queries, thoughts }: { cfg: (typeof CONFIGS)[number]; queries: { query: string; expected: string }[]; thoughts: number }): Promise<Row> {
  const times: number[] = [];
  let expanded = 0;
  let fromCore = 0;
  let hit1 = 0;
  let hit10 = 0;
  let mrr = 0;
  let mode = "";
  for (const { query, expected } of queries) {
    const t0 = performance.now();
    const handle = openStore({ store: "bench" });
    const r = await rememberByQuery({ engine: sqliteRemember, handle, core: openCoreFor({ handle, includeCore: cfg.includeCore }), input: { query, include_core: cfg.includeCore, weights: cfg.weights } });
    times.push(performance.now() - t0);
    expanded += r.results.filter((x) => x.matched_by.includes("expansion")).length;
    fromCore += r.results.filter((x) => x.store === "core").length;
    const rank = r.results.findIndex((x) => x.id === expected && x.store === "bench");
    if (rank === 0) hit1++;
    if (rank >= 0) {
      hit10++;
      mrr += 1 / (rank + 1);
    }
    mode = r.mode;
  }
  return {
    thoughts,
    remember: cfg.label,
    mode,
    queries: QUERIES,
    "p50 ms": percentile(times, 50),
    "p95 ms": percentile(times, 95),
    "max ms": Math.max(...times),
    "known item hit@1": hit1 / QUERIES,
    "hit@10": hit10 / QUERIES,
    "MRR@10": mrr / QUERIES,
    "via expansion/query": expanded / QUERIES,
    "from core/query": fromCore / QUERIES,
  };
}

/**
 * Every configuration on the same queries (the first row sees each query first, in a process that has answered
 * nothing yet: caches empty, pages and code cold), then the first configuration on other queries, new to a
 * process that is now warm: what a running server pays for a query it has not seen.
 */
async function measureConfigs({ size, queries, newQueries }: { size: Size; queries: { query: string; expected: string }[]; newQueries: { query: string; expected: string }[] }): Promise<Row[]> {
  const rows: Row[] = [];
  const configs = CONFIGS.filter((c) => !c.includeCore || size.stores.some((s) => s === "core"));
  for (const cfg of configs) rows.push(await measureRemember({ cfg, queries, thoughts: size.thoughts }));
  const fresh = await measureRemember({ cfg: configs[0], queries: newQueries, thoughts: size.thoughts });
  rows.push({ ...fresh, remember: `${configs[0].label}: other queries, new to the warm process` });
  return rows;
}

const vectorsUsed = () => (getStoreDb({ store: "bench" }).vectors.available ? `HNSW (usearch) for sets of ${getConfig().annMinVectors}+ vectors, else sqlite-vec SimHash index` : "JS scan");

/** The ids and names a kept store was seeded with, in seeding order (thoughts and nodes are numbered by seq as written). */
function reloadSeeded(): Seeded {
  const db = getStoreDb({ store: "bench" }).sqlite;
  const nodes = db.prepare("select id, name from kg_node order by seq").all() as { id: string; name: string }[];
  const thoughtIds = db.prepare("select id from thoughts order by seq").pluck().all() as string[];
  return { writeMs: 0, writes: 0, nodeNames: nodes.map((n) => n.name), nodeIds: nodes.map((n) => n.id), thoughtIds };
}

/** Seed one size in a fresh DATA_DIR, drain the embed queue with the real worker, then run every configuration that size has stores for. */
async function runSize({ size, texts }: { size: Size; texts: string[] }): Promise<{ seedRows: Row[]; rememberRows: Row[]; splitRow: Row; legRows: Row[]; vectors: string }> {
  const dataDir = KEEP_DIR ? path.join(KEEP_DIR, String(size.thoughts)) : fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-graph-"));
  const keptSeed = path.join(dataDir, "seed-rows.json");
  process.env.DATA_DIR = dataDir;
  // The whole seed is queued before the worker runs; keep the store out of degraded mode meanwhile.
  process.env.DUALMIND_EMBED_BACKLOG_WATERMARK = String(10 * size.thoughts);
  resetConfigForTests();
  resetEmbedderForTests();
  try {
    const nodes = size.thoughts / 2;
    if (KEEP_DIR && fs.existsSync(keptSeed)) {
      const kept = reloadSeeded();
      // Its HNSW graphs brought up to date first (loaded, caught up, or rebuilt when this version links them
      // differently), as for a fresh seed: otherwise every query below is timed against a graph still being built.
      const annRows: Row[] = [];
      for (const store of size.stores) {
        const a0 = performance.now();
        const annVectors = await buildAnnIndexes({ handle: getStoreDb({ store }), kinds: [THOUGHT_KIND, NODE_KIND] });
        annRows.push({ "HNSW vectors (this run)": annVectors, "HNSW load or rebuild s (this run)": (performance.now() - a0) / 1000 });
      }
      const queries = knownItemQueries({ seeded: kept, texts, thoughts: size.thoughts });
      const rememberRows = await measureConfigs({ size, queries, newQueries: knownItemQueries({ seeded: kept, texts, thoughts: size.thoughts, salt: 1 }) });
      const splitRow = await rememberSplit({ queries, thoughts: size.thoughts });
      const seedRows = (JSON.parse(fs.readFileSync(keptSeed, "utf8")) as Row[]).map((r) => ({ ...r, store: `${r.store} (kept from an earlier run)`, ...annRows[(size.stores as readonly string[]).indexOf(String(r.store))] }));
      return { seedRows, rememberRows, splitRow, legRows: rememberLegFirstSight({ queries, thoughts: size.thoughts }), vectors: vectorsUsed() };
    }
    fs.mkdirSync(dataDir, { recursive: true });
    const seedRows: Row[] = [];
    let known: Seeded | null = null;
    for (const [k, store] of size.stores.entries()) {
      const handle = getStoreDb({ store });
      const seeded = seedGraph({ handle, texts, offset: k * (size.thoughts + nodes), thoughts: size.thoughts });
      if (store === "bench") known = seeded;
      const e0 = performance.now();
      const drained = await drainEmbedQueues({ stores: [store], batchSize: 256 });
      const embedMs = performance.now() - e0;
      // The HNSW graphs of sets past DUALMIND_ANN_MIN_VECTORS, built as a running server's background ticks build them.
      const a0 = performance.now();
      const annVectors = await buildAnnIndexes({ handle, kinds: [THOUGHT_KIND, NODE_KIND] });
      const annMs = performance.now() - a0;
      seedRows.push({
        store,
        thoughts: size.thoughts,
        nodes,
        relations: (handle.sqlite.prepare("select count(*) as n from kg_relation").get() as { n: number }).n,
        writes: seeded.writes,
        "write s": seeded.writeMs / 1000,
        "writes/s": Math.round(seeded.writes / (seeded.writeMs / 1000)),
        embedded: drained.embedded,
        "embed s": embedMs / 1000,
        "embedded/s": Math.round(drained.embedded / (embedMs / 1000)),
        "HNSW vectors": annVectors,
        "HNSW build s": annMs / 1000,
        "index.db MB": fs.statSync(path.join(dataDir, "stores", store, "index.db")).size / 2 ** 20,
      });
    }
    if (KEEP_DIR) fs.writeFileSync(keptSeed, JSON.stringify(seedRows));
    const queries = knownItemQueries({ seeded: known!, texts, thoughts: size.thoughts });
    const rememberRows = await measureConfigs({ size, queries, newQueries: knownItemQueries({ seeded: known!, texts, thoughts: size.thoughts, salt: 1 }) });
    const splitRow = await rememberSplit({ queries, thoughts: size.thoughts });
    return { seedRows, rememberRows, splitRow, legRows: rememberLegFirstSight({ queries, thoughts: size.thoughts }), vectors: vectorsUsed() };
  } finally {
    closeAllDatabases();
    if (!KEEP_DIR) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Each measure taken at both sizes: the small and large value side by side, and how much it grew. */
function growthRows({ seedRows, rememberRows, sizes: [small, large] }: { seedRows: Row[]; rememberRows: Row[]; sizes: number[] }): Row[] {
  const pair = (measure: string, a: Row | undefined, b: Row | undefined, key: string): Row[] =>
    a && b ? [{ measure, [`${small} thoughts`]: a[key], [`${large} thoughts`]: b[key], "large / small": `${(Number(b[key]) / Number(a[key])).toFixed(2)}×` }] : [];
  const seedAt = (thoughts: number) => seedRows.find((r) => r.store === "bench" && r.thoughts === thoughts);
  const rememberAt = (label: string, thoughts: number) => rememberRows.find((r) => r.remember === label && r.thoughts === thoughts);
  return [
    ...pair("seed writes/s (bench store)", seedAt(small), seedAt(large), "writes/s"),
    ...pair("embed worker items/s (bench store)", seedAt(small), seedAt(large), "embedded/s"),
    ...pair("index.db MB (bench store)", seedAt(small), seedAt(large), "index.db MB"),
    ...CONFIGS.flatMap(({ label }) => [
      ...pair(`remember p50 ms: ${label}`, rememberAt(label, small), rememberAt(label, large), "p50 ms"),
      ...pair(`remember p95 ms: ${label}`, rememberAt(label, small), rememberAt(label, large), "p95 ms"),
      ...pair(`remember MRR@10: ${label}`, rememberAt(label, small), rememberAt(label, large), "MRR@10"),
    ]),
  ];
}

export default async function run() {
  process.env.DUALMIND_LOG_LEVEL = "warn";
  const largest = SIZES[SIZES.length - 1];
  const texts = loadTextWindows(Math.max(...SIZES.map((s) => s.stores.length * s.thoughts * 1.5)));
  const seedRows: Row[] = [];
  const rememberRows: Row[] = [];
  const splitRows: Row[] = [];
  const legRows: Row[] = [];
  let vectors = "";
  for (const size of SIZES) {
    const r = await runSize({ size, texts });
    seedRows.push(...r.seedRows);
    rememberRows.push(...r.rememberRows);
    splitRows.push(r.splitRow);
    legRows.push(...r.legRows);
    vectors = r.vectors;
  }
  printTable(`Seed through the domain functions (${SEED_BATCH} calls per transaction), then the real embed worker (batches of 256), then the HNSW graphs of sets past the threshold (as the server's background build makes them); core only at ${SIZES[0].thoughts}`, seedRows);
  printTable(`remember latency (limit 10, 25 candidates per source, min edge weight 0.5; vectors: ${vectors}); store + core only at ${SIZES[0].thoughts}`, rememberRows);
  printTable("remember, store only: where the time goes (each leg timed alone on the same queries, after the table above)", splitRows);
  printTable("remember's full-text leg (25 candidates per table) on words never seen before: every cache cleared before each call", legRows);
  printTable(`remember: how cost grows from ${SIZES[0].thoughts} to ${largest.thoughts} thoughts (same queries, same configurations)`, growthRows({ seedRows, rememberRows, sizes: [SIZES[0].thoughts, largest.thoughts] }));
}
