/**
 * Fused remember at 10k thoughts + 5k nodes (builtin embedder, every vector
 * written by the real worker), with and without core (core seeded at the same
 * size). Seeding goes through the domain functions (thinkThought, createNode,
 * createFrame, createOrMergeRelation, linkEvidence), so write costs are
 * reported too.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb, type StoreHandle } from "../lib/db/connection";
import { ENTITY_TYPES, FRAME_COLUMNS } from "../lib/db/schema/graph";
import { resetEmbedderForTests } from "../lib/embed/model";
import { drainEmbedQueues } from "../lib/embed/worker";
import { linkEvidence } from "../lib/graph/evidence";
import { createFrame } from "../lib/graph/frames";
import { createNode } from "../lib/graph/nodes";
import { createOrMergeRelation } from "../lib/graph/relations";
import { rememberByQuery } from "../lib/graph/remember";
import { thinkThought } from "../lib/graph/thoughts";
import { loadTextWindows } from "./corpus";
import { percentile, printTable } from "./table";

const THOUGHTS = 10_000;
const NODES = 5_000;
const RELATIONS_PER_NODE = 2;
const QUERIES = 100;

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

function seedGraph(handle: StoreHandle, texts: string[], offset: number): { writeMs: number; nodeNames: string[] } {
  const rand = rng(offset + 7);
  const started = performance.now();
  const thoughtIds: string[] = [];
  for (let i = 0; i < THOUGHTS; i++) {
    const t = thinkThought({ handle, input: { content: texts[(offset + i) % texts.length], framework: i % 5 === 0 ? "debug" : "conversation", chain_id: `chain-${i % 500}`, timestamp: 1_790_000_000_000 + i * 60_000 }, actor: "bench" });
    thoughtIds.push(t.id);
  }
  const nodeIds: string[] = [];
  const nodeNames: string[] = [];
  for (let i = 0; i < NODES; i++) {
    const words = texts[(offset + THOUGHTS + i) % texts.length].split(/\s+/).filter((w) => /^[A-Za-z]{4,}$/.test(w)).slice(0, 3);
    const name = `${words.join(" ") || "node"} ${i}`;
    const n = createNode({ handle, input: { name, entity_type: ENTITY_TYPES[i % ENTITY_TYPES.length] }, actor: "bench" });
    nodeIds.push(n.id);
    nodeNames.push(name);
    const f = createFrame({ handle, input: { node_id: n.id, column: FRAME_COLUMNS[i % FRAME_COLUMNS.length], properties: { note: texts[(offset + i * 3) % texts.length].slice(0, 120), state: i % 7 === 0 ? "down" : "up" } }, actor: "bench" });
    linkEvidence({ handle, input: { target: "frame", target_id: f.id, thought_id: thoughtIds[Math.floor(rand() * thoughtIds.length)] }, actor: "bench" });
  }
  for (let i = 0; i < NODES; i++) {
    for (let r = 0; r < RELATIONS_PER_NODE; r++) {
      const j = Math.floor(rand() * NODES);
      if (j === i) continue;
      createOrMergeRelation({ handle, input: { from_id: nodeIds[i], to_id: nodeIds[j], relationship_type: r === 0 ? "relates_to" : "depends_on", weight: Math.round(rand() * 100) / 100, confidence: 0.8 }, actor: "bench" });
    }
  }
  return { writeMs: performance.now() - started, nodeNames };
}

export default async function run() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-graph-"));
  process.env.DATA_DIR = dataDir;
  process.env.DUALMIND_LOG_LEVEL = "warn";
  // The whole seed is queued before the worker runs; keep the store out of degraded mode meanwhile.
  process.env.DUALMIND_EMBED_BACKLOG_WATERMARK = String(10 * (THOUGHTS + NODES));
  resetConfigForTests();
  resetEmbedderForTests();
  try {
    const texts = loadTextWindows(2 * (THOUGHTS + NODES));
    const seedRows: Record<string, string | number>[] = [];
    let nodeNames: string[] = [];
    for (const [store, offset] of [
      ["bench", 0],
      ["core", THOUGHTS + NODES],
    ] as const) {
      const handle = getStoreDb(store);
      const seeded = seedGraph(handle, texts, offset);
      if (store === "bench") nodeNames = seeded.nodeNames;
      const e0 = performance.now();
      const drained = await drainEmbedQueues({ stores: [store], batchSize: 256 });
      const embedMs = performance.now() - e0;
      seedRows.push({
        store,
        thoughts: THOUGHTS,
        nodes: NODES,
        relations: (handle.sqlite.prepare("select count(*) as n from kg_relation").get() as { n: number }).n,
        "writes/s (thoughts+nodes+frames+evidence+relations)": Math.round((THOUGHTS + 2 * NODES + NODES + NODES * RELATIONS_PER_NODE) / (seeded.writeMs / 1000)),
        "embedded": drained.embedded,
        "embed s": (embedMs / 1000).toFixed(1),
      });
    }
    printTable(`Seed: ${THOUGHTS} thoughts + ${NODES} nodes per store`, seedRows);

    // Queries: a few words of other corpus windows plus a node's name now and then (known-item style).
    const queries = Array.from({ length: QUERIES }, (_, i) =>
      i % 4 === 0 ? nodeNames[(i * 131) % nodeNames.length] : texts[(i * 7919) % texts.length].split(/\s+/).slice(0, 6).join(" "),
    );
    const rows: Record<string, string | number>[] = [];
    for (const includeCore of [false, true]) {
      const times: number[] = [];
      let results = 0;
      let expanded = 0;
      let fromCore = 0;
      let mode = "";
      for (const query of queries) {
        const t0 = performance.now();
        const r = await rememberByQuery({ store: "bench", input: { query, include_core: includeCore } });
        times.push(performance.now() - t0);
        results += r.results.length;
        expanded += r.results.filter((x) => x.matched_by.includes("expansion")).length;
        fromCore += r.results.filter((x) => x.store === "core").length;
        mode = r.mode;
      }
      rows.push({
        remember: includeCore ? "store + core (read-only)" : "store only",
        mode,
        queries: QUERIES,
        "p50 ms": percentile(times, 50),
        "p95 ms": percentile(times, 95),
        "max ms": Math.max(...times),
        "results/query": results / QUERIES,
        "via expansion/query": expanded / QUERIES,
        "from core/query": fromCore / QUERIES,
      });
    }
    printTable(`remember latency (limit 10, 25 candidates per source, min edge weight 0.5; vectors: ${getStoreDb("bench").vectors.available ? "sqlite-vec SimHash index" : "JS scan"})`, rows);
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
