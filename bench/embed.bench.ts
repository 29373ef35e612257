/**
 * Vector search at 10k and 100k chunks (384-d, builtin embedder), one run,
 * side by side: our SimHash-prefilter + exact rescoring, our exact mode, raw
 * exact sqlite-vec KNN (vec0 float, cosine) on the same vectors, and Orama's
 * vector search on the same vectors. Plus worker throughput through the queue.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { create, insertMultiple, search } from "@orama/orama";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { registerEmbeddable } from "../lib/embed/embeddables";
import { getEmbedder, resetEmbedderForTests } from "../lib/embed/model";
import { BuiltinProvider } from "../lib/embed/providers/builtin";
import { enqueueEmbeddings } from "../lib/embed/queue";
import { ensureVecIndex, indexVector, knnSearch, vectorToBlob } from "../lib/embed/vector-index";
import { drainEmbedQueues } from "../lib/embed/worker";
import { loadTextWindows } from "./corpus";
import { percentile, printTable } from "./table";

const QUERIES = 100;
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const K = 10;

function time<T>(fn: () => T): [T, number] {
  const s = performance.now();
  const r = fn();
  return [r, performance.now() - s];
}

export default async function run() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-embed-"));
  process.env.DATA_DIR = dataDir;
  process.env.DUALMIND_LOG_LEVEL = "warn";
  resetConfigForTests();
  resetEmbedderForTests();
  try {
    const texts = loadTextWindows(100_000);
    const provider = new BuiltinProvider();
    const fp = await getEmbedder().fingerprint;
    const [vectors, embedMs] = time(() => texts.map((t) => provider.embedOne(t)));
    // Queries: the opening words of other windows (known-item style), embedded as queries.
    const queries = Array.from({ length: QUERIES }, (_, i) => provider.embedOne(texts[(i * 7919) % texts.length].split(/\s+/).slice(0, 8).join(" ")));

    const rows: Record<string, string | number>[] = [];
    for (const n of [10_000, texts.length]) {
      const store = `bench${n}`;
      const h = getStoreDb(store);
      const { sqlite } = h;
      ensureVecIndex(h, fp.id, 384);
      sqlite.exec("create virtual table raw_vec using vec0(embedding float[384] distance_metric=cosine)");
      const ins = sqlite.prepare("insert into embeddings(kind, ref_id, fingerprint_id, dim, task, input_hash, vector, created_at) values ('chunk', ?, ?, 384, 'document', '', ?, 0) returning id");
      const insRaw = sqlite.prepare("insert into raw_vec(rowid, embedding) values (?, ?)");
      sqlite.transaction(() => {
        for (let i = 0; i < n; i++) {
          const { id } = ins.get(i + 1, fp.id, vectorToBlob(vectors[i])) as { id: number };
          indexVector(h, { fingerprintId: fp.id, embeddingId: id, kind: "chunk", vector: vectors[i] });
          insRaw.run(BigInt(i + 1), vectors[i]);
        }
      })();
      const rawKnn = sqlite.prepare("select rowid, distance from raw_vec where embedding match ? and k = ?");
      const truth: number[][] = [];
      const tRaw: number[] = [];
      for (const q of queries) {
        const [r, ms] = time(() => rawKnn.all(q, K) as { rowid: number }[]);
        truth.push(r.map((x) => Number(x.rowid)));
        tRaw.push(ms);
      }
      const measure = (label: string, fn: (q: Float32Array) => number[]) => {
        const t: number[] = [];
        let hit = 0;
        queries.forEach((q, qi) => {
          const [ids, ms] = time(() => fn(q));
          t.push(ms);
          hit += ids.filter((id) => truth[qi].includes(id)).length / K;
        });
        return { label, t, recall: hit / queries.length };
      };
      const ours = measure("dualmind (simhash + rescore)", (q) => knnSearch(h, { kind: "chunk", fingerprintId: fp.id, query: q, k: K }).hits.map((x) => x.refId));
      const exact = measure("dualmind exact=true", (q) => knnSearch(h, { kind: "chunk", fingerprintId: fp.id, query: q, k: K, exact: true }).hits.map((x) => x.refId));

      const orama = create({ schema: { id: "string", embedding: "vector[384]" } as const });
      await insertMultiple(orama, vectors.slice(0, n).map((v, i) => ({ id: String(i + 1), embedding: Array.from(v) })));
      const oramaT: number[] = [];
      let oramaHit = 0;
      for (let qi = 0; qi < queries.length; qi++) {
        const s = performance.now();
        const res = await search(orama, { mode: "vector", vector: { value: Array.from(queries[qi]), property: "embedding" }, similarity: 0, limit: K, includeVectors: false });
        oramaT.push(performance.now() - s);
        oramaHit += res.hits.map((x) => Number((x.document as { id: string }).id)).filter((id) => truth[qi].includes(id)).length / K;
      }
      const rawP50 = percentile(tRaw, 50);
      const line = (label: string, t: number[], recall: number) => ({
        chunks: n,
        method: label,
        "p50 ms": percentile(t, 50),
        "p95 ms": percentile(t, 95),
        "p50 vs raw vec0": `${(percentile(t, 50) / rawP50).toFixed(2)}×`,
        "recall@10 vs exact": recall.toFixed(3),
      });
      rows.push(line("raw sqlite-vec exact KNN (vec0 float, cosine)", tRaw, 1));
      rows.push(line(ours.label, ours.t, ours.recall));
      rows.push(line(exact.label, exact.t, exact.recall));
      rows.push(line("Orama vector search", oramaT, oramaHit / queries.length));
    }
    printTable(`Vector KNN, k=${K}, ${QUERIES} queries, 384-d builtin vectors of real text`, rows);

    // Worker throughput through the real queue (claim → embed → write → index), builtin provider.
    const wStore = "benchworker";
    const h = getStoreDb(wStore);
    h.sqlite.exec("create table bench_texts(id integer primary key, body text not null)");
    registerEmbeddable({
      kind: "benchtext",
      artifactType: "benchtext",
      load: (sqlite, ids) => new Map((sqlite.prepare("select id, body from bench_texts where id in (select value from json_each(?))").all(JSON.stringify(ids)) as { id: number; body: string }[]).map((r) => [r.id, { text: r.body, inputHash: sha256(r.body) }])),
      listAll: () => [],
    });
    const n = 10_000;
    const insT = h.sqlite.prepare("insert into bench_texts(id, body) values (?, ?)");
    h.sqlite.transaction(() => texts.slice(0, n).forEach((t, i) => insT.run(i + 1, t)))();
    const [, enqueueMs] = time(() => enqueueEmbeddings(h, texts.slice(0, n).map((t, i) => ({ kind: "benchtext", refId: i + 1, inputHash: sha256(t) }))));
    const s = performance.now();
    const drained = await drainEmbedQueues({ stores: [wStore] });
    const drainMs = performance.now() - s;
    printTable("Embedding throughput (builtin provider, 384-d)", [
      { stage: "embed only (in memory)", items: texts.length, "items/s": Math.round(texts.length / (embedMs / 1000)) },
      { stage: "enqueue (writer side)", items: n, "items/s": Math.round(n / (enqueueMs / 1000)) },
      { stage: "worker: claim → embed → provenance → write BLOB + index + cache", items: drained.embedded, "items/s": Math.round(drained.embedded / (drainMs / 1000)) },
    ]);
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
