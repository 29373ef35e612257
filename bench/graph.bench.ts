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

function seedGraph(handle: StoreHandle, texts: string[], offset: number): { writeMs: number; nodeNames: string[]; nodeIds: string[]; thoughtIds: string[] } {
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
  return { writeMs: performance.now() - started, nodeNames, nodeIds, thoughtIds };
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
    let known: ReturnType<typeof seedGraph> | null = null;
    for (const [store, offset] of [
      ["bench", 0],
      ["core", THOUGHTS + NODES],
    ] as const) {
      const handle = getStoreDb(store);
      const seeded = seedGraph(handle, texts, offset);
      if (store === "bench") known = seeded;
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

    // Known-item queries: a node's name (every 4th) or the opening words of a thought; the item should come back.
    const { nodeNames, nodeIds, thoughtIds } = known!;
    const queries = Array.from({ length: QUERIES }, (_, i) => {
      if (i % 4 === 0) {
        const j = (i * 131) % NODES;
        return { query: nodeNames[j], expected: nodeIds[j] };
      }
      const j = (i * 7919) % THOUGHTS;
      return { query: texts[j].split(/\s+/).slice(0, 8).join(" "), expected: thoughtIds[j] };
    });
    const configs = [
      { label: "store only", includeCore: false, weights: undefined },
      { label: "store only, semantic weight only", includeCore: false, weights: { episodic: 0, procedural: 0, relation: 0, conflict: 0 } },
      { label: "store only, graph-heavy weights (epi 0.3, proc 0.3, rel 0.4)", includeCore: false, weights: { episodic: 0.3, procedural: 0.3, relation: 0.4 } },
      { label: "store + core (read-only)", includeCore: true, weights: undefined },
    ];
    const rows: Record<string, string | number>[] = [];
    for (const cfg of configs) {
      const times: number[] = [];
      let expanded = 0;
      let fromCore = 0;
      let hit1 = 0;
      let hit10 = 0;
      let mrr = 0;
      let mode = "";
      for (const { query, expected } of queries) {
        const t0 = performance.now();
        const r = await rememberByQuery({ store: "bench", input: { query, include_core: cfg.includeCore, weights: cfg.weights } });
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
      rows.push({
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
      });
    }
    printTable(`remember latency (limit 10, 25 candidates per source, min edge weight 0.5; vectors: ${getStoreDb("bench").vectors.available ? "sqlite-vec SimHash index" : "JS scan"})`, rows);
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
