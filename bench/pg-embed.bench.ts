/**
 * The embed queue on PostgreSQL (lib/index/embed-queue-pg.ts): how fast N
 * workers on N replicas (a pool each) drain one store's queue, and that they
 * embed every chunk exactly once while doing it. The same synthesized notes
 * as bench/pg-store.bench.ts (BENCH_PG_EMBED_NOTES, default 2,000), the builtin
 * provider (384 dimensions, in-process: the figures are the queue's and the
 * database's cost, not a remote model's), batches of 32. Each row starts from
 * the same full queue (vectors, cache and provenance cleared, every chunk
 * queued again), so rows compare within the run.
 *
 * PostgreSQL is a real server: BENCH_PG_URL when set, else a throwaway
 * cluster started like the test suite's (durability off).
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import { closePgHandle, openPgHandle, type PgHandle } from "../lib/db/pg";
import { withStoreTx, type PgStoreHandle } from "../lib/db/pg-store";
import { computeFingerprint } from "../lib/embed/providers";
import { BuiltinProvider } from "../lib/embed/providers/builtin";
import { drainEmbedQueuesPg } from "../lib/index/embed-queue-pg";
import { putDocuments } from "../lib/index/ingest";
import { putDocumentsSchema } from "../lib/index/ingest";
import { createStorePg, openStorePg } from "../lib/stores/engines/pg";
import { benchPostgres } from "./pg-server";
import { loadTextWindows, notesBetween } from "./corpus";
import { printTable } from "./table";

const NOTES = Number(process.env.BENCH_PG_EMBED_NOTES ?? 2_000);
const WORKERS = [1, 2, 4];

export default async function pgEmbedBench(): Promise<void> {
  const pgServer = await benchPostgres("bench_embed");
  if (!pgServer) return;
  const { url, server } = pgServer;
  const replicas: PgHandle[] = [];
  try {
    for (let i = 0; i < Math.max(...WORKERS); i++) replicas.push(await openPgHandle({ url, max: 2 }));
    await createStorePg({ pg: replicas[0], input: { name: "embed" }, actor: "bench" });
    const stores: PgStoreHandle[] = await Promise.all(replicas.map((pg) => openStorePg({ pg, store: "embed" })));
    const notes = notesBetween({ windows: loadTextWindows(20_000), from: 0, to: NOTES });
    for (let at = 0; at < notes.length; at += 200) {
      const documents = notes.slice(at, at + 200).map((n) => ({ path: n.path, content: n.text }));
      await putDocuments({ handle: stores[0], input: putDocumentsSchema.parse({ documents }), actor: "bench" });
    }
    const provider = new BuiltinProvider({});
    const embedder = { provider, fingerprint: computeFingerprint(provider) };
    const count = async (q: ReturnType<typeof sql>) => withStoreTx({ handle: stores[0], readOnly: true, work: async (tx) => Number(((await tx.execute(q)).rows[0] as { n: string }).n) });
    const rows: Record<string, string | number>[] = [];
    for (const workers of WORKERS) {
      await withStoreTx({ handle: stores[0], work: async (tx) => {
        await tx.execute(sql`truncate chunk_embeddings, embedding_cache, embed_queue, public.provenance`);
        await tx.execute(sql`insert into embed_queue (kind, ref_id, input_hash, enqueued_at, next_attempt_at) select 'chunk', id, chunk_sha256, 0, 0 from chunks`);
      } });
      const chunks = await count(sql`select count(*) as n from embed_queue`);
      const t0 = performance.now();
      const done = await Promise.all(stores.slice(0, workers).map((handle, i) => drainEmbedQueuesPg({ handles: [handle], embedder, workerId: `replica-${i}`, batchSize: 32 })));
      const seconds = (performance.now() - t0) / 1000;
      const vectors = await count(sql`select count(*) as n from chunk_embeddings`);
      const provenance = await count(sql`select count(*) as n from public.provenance where store = 'embed'`);
      rows.push({
        "workers (one replica each)": workers,
        chunks,
        "drain s": seconds,
        "chunks/s": chunks / seconds,
        "per worker": done.map((d) => d.embedded).join(" / "),
        "vectors written": vectors,
        "provenance rows": provenance,
        "load (1 min)": os.loadavg()[0],
      });
    }
    printTable(`PostgreSQL embed queue: N workers draining one store's queue (FOR UPDATE SKIP LOCKED + lease), builtin provider, batch 32, ${NOTES} notes`, rows);
  } finally {
    for (const r of replicas) await closePgHandle(r);
    server?.stop();
  }
}
