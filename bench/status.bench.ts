/**
 * The one live store status at 100k chunks (issue 17): what Overview, Health
 * (all stores and one) and the store page cost on the server, and what the
 * status itself costs beside the full scan it replaced.
 *  - in process: getStoreStatus (counters kept by triggers) vs computeDrift +
 *    a whole-queue count (what every page and route ran per request before);
 *  - over HTTP: each page's full server-rendered HTML on `next start`.
 * BENCH_STATUS_CHUNKS (default 100000) sizes the store; BENCH_STATUS_EMBED
 * (default 20000) items are embedded first, so the store has vectors and a backlog.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases } from "../lib/db/connection";
import { readLiveCounts } from "../lib/embed/counters";
import { computeDrift } from "../tests/fixtures/drift-recount";
import { getEmbedder } from "../lib/embed/model";
import { getStoreStatus } from "../lib/embed/status";
import { processEmbedBatch } from "../lib/embed/worker";
import { putDocuments, putDocumentsSchema } from "../lib/index/ingest";
import { createStore, openStore } from "../lib/stores/stores";
import { loadTextWindows, notesBetween } from "./corpus";
import { signIn, startServer, timePage } from "./health.bench";
import { percentile, printTable } from "./table";

const CHUNKS = Number(process.env.BENCH_STATUS_CHUNKS ?? 100_000);
const EMBED = Number(process.env.BENCH_STATUS_EMBED ?? 20_000);
const STORE = "big";

async function time(runs: number, f: () => unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i <= runs; i++) {
    const t0 = performance.now();
    await f();
    out.push(performance.now() - t0);
  }
  out.shift();
  return out;
}

export default async function run(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-status-"));
  process.env.DATA_DIR = dataDir;
  process.env.DUALMIND_LOG_LEVEL = "warn";
  resetConfigForTests();
  try {
    createStore({ input: { name: STORE }, actor: "bench" });
    const handle = openStore({ store: STORE });
    const windows = loadTextWindows(50_000);
    const started = performance.now();
    let notes = 0;
    while (readLiveCounts({ handle }).artifacts < CHUNKS) {
      const documents = notesBetween({ windows, from: notes, to: notes + 200 }).map((n) => ({ path: n.path, content: n.text }));
      putDocuments({ handle, input: putDocumentsSchema.parse({ documents }), actor: "bench" });
      notes += 200;
    }
    const ingestS = (performance.now() - started) / 1000;
    let embedded = 0;
    while (embedded < EMBED) {
      const r = await processEmbedBatch({ handle, batchSize: 256 });
      if (r.claimed === 0) break;
      embedded += r.embedded;
    }
    const counts = readLiveCounts({ handle });
    printTable(`Status bench store: ${notes.toLocaleString("en-US")} notes, built in ${ingestS.toFixed(0)} s`, [
      { chunks: counts.artifacts, "with vectors": counts.fresh, "queued (backlog)": counts.pending, parked: counts.parked },
    ]);

    const configured = await getEmbedder().fingerprint;
    const live = await time(21, () => getStoreStatus({ handle }));
    const scan = await time(5, () => {
      computeDrift({ handle, configured });
      return handle.sqlite.prepare("select count(*) filter (where parked_at is null) as pending, min(enqueued_at) filter (where parked_at is null) as oldest, count(*) filter (where parked_at is not null) as parked from embed_queue").get();
    });
    printTable(`Store status at ${counts.artifacts.toLocaleString("en-US")} chunks, in process (p50/p95)`, [
      { how: "getStoreStatus (live counters)", runs: live.length, "p50 ms": percentile(live, 50), "p95 ms": percentile(live, 95) },
      { how: "before: computeDrift + whole-queue count", runs: scan.length, "p50 ms": percentile(scan, 50), "p95 ms": percentile(scan, 95) },
    ]);

    closeAllDatabases();
    // No worker in the server: the store stays as built while pages are timed.
    const server = await startServer(dataDir, { DUALMIND_EMBED_WORKER: "false" });
    try {
      const cookie = await signIn();
      const rows = [];
      for (const [page, url] of [
        ["Overview", "/"],
        ["Health (all stores)", "/health"],
        ["Health (one store)", `/health?store=${STORE}`],
        ["store page", `/stores/${STORE}`],
      ] as const) {
        const samples = await timePage(url, cookie, 11);
        rows.push({ page, url, runs: samples.length, "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95) });
      }
      printTable(`Dashboard page server time at ${counts.artifacts.toLocaleString("en-US")} chunks (full HTML over loopback, p50/p95)`, rows);
    } finally {
      server.kill("SIGTERM");
    }
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
