/**
 * API throughput, side by side in one run: a read route through Next
 * (`GET /stores/{store}/search`, FTS mode, bearer auth) vs Next's trivial
 * route (`GET /health`: one `select 1`, the framework ceiling) vs a bare
 * node:http server making the same search call on the same DATA_DIR.
 */
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { putDocuments } from "../lib/index/ingest";
import { LISTED_TABLES } from "../lib/index/word-list-upkeep";
import { buildWordLists } from "../lib/retrieval/word-lists";
import { searchInputSchema, searchStore } from "../lib/index/search";
import { buildFtsMatch } from "../lib/retrieval";
import { createStore, openCoreFor, openStore } from "../lib/stores/stores";
import type { StoreHandle } from "../lib/db/connection";
import { ensureProductionBuild, freePort, RELIABILITY_TOKEN, startServer } from "../tests/fixtures/next-server";
import { percentile, printTable } from "./table";

export const CONCURRENCY = 16;
export const SECONDS = Number(process.env.BENCH_API_SECONDS ?? 5);
/**
 * Untimed requests, one after another, before each throughput run: a
 * query's first call reads what later calls find memoized (the in-process
 * table times both), which would otherwise weigh on a 5-second run on a
 * loaded machine and hide the steady rate.
 */
export const WARMUP_REQUESTS = 3;
/**
 * The broad query once more, with the server left idle this long after the
 * warm-up: background work (word-list upkeep) gets turns between requests,
 * which a server under a closed loop of 16 clients gets few of. The row
 * without it shows that transient; this one the steady rate.
 */
const SETTLE_MS = 2000;
/** BENCH_API_SIZES=100000 (comma-separated): only these document counts. */
const SIZES = process.env.BENCH_API_SIZES ? process.env.BENCH_API_SIZES.split(",").map(Number) : [10_000, 100_000];
/** BENCH_API_PORT: `next start` on this port and the bare server on the next one (default: any free ports). */
const PORT = process.env.BENCH_API_PORT ? Number(process.env.BENCH_API_PORT) : undefined;
const WORDS = ["backup", "restore", "rotation", "ledger", "cipher", "kernel", "socket", "thread", "cache", "queue", "shard", "replica", "vacuum", "index", "token", "audit"];

/** DATA_DIR with one store `bench` of `docs` documents: 40 of WORDS each, and a word of its own (`item<n>`). */
export function seedBenchStore(dataDir: string, docs: number): StoreHandle {
  process.env.DATA_DIR = dataDir;
  resetConfigForTests();
  createStore({ input: { name: "bench" }, actor: "bench" });
  const handle = openStore({ store: "bench" });
  for (let start = 0; start < docs; start += 500) {
    const documents = Array.from({ length: Math.min(500, docs - start) }, (_, k) => {
      const i = start + k;
      const words = Array.from({ length: 40 }, (_, w) => WORDS[(i * 7 + w * 13) % WORDS.length]).join(" ");
      return { path: `docs/${i}.md`, content: `# Doc ${i}\n\n${words} item${i}` };
    });
    putDocuments({ handle, input: { documents }, actor: "bench" });
  }
  return handle;
}

/** seedBenchStore, then the word lists a server would build between requests (unless BENCH_API_WORD_LISTS=0); closes the databases. */
export function seed(dataDir: string, docs: number): void {
  const handle = seedBenchStore(dataDir, docs);
  // The word lists a server builds between requests after such an ingest (lib/index/word-list-upkeep.ts), built here
  // first, so the runs measure the store as it serves once they exist. BENCH_API_WORD_LISTS=0: without them.
  if (process.env.BENCH_API_WORD_LISTS !== "0") {
    for (const { table, texts } of LISTED_TABLES.filter((t) => t.table === "chunks_fts" || t.table === "documents_fts")) {
      const t0 = performance.now();
      const steps = buildWordLists({ db: handle.sqlite, table, texts: texts?.(handle.sqlite) });
      process.stderr.write(`api bench: ${table} word lists built in ${steps} steps, ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    }
  }
  closeAllDatabases();
}

/** Words that are in every document, two or three at a time: the broad query set. */
const BROAD_SET = ["rotation ledger", "backup restore", "cipher kernel socket", "thread cache", "queue shard replica", "vacuum index", "token audit", "rotation socket"];
const ROUNDS = 5;
const IN_PROCESS_BUDGET_MS = 60_000;

/** Top 10 chunk ids as FTS5 ranks every match (one joined statement, bm25 for every row): the reference for agreement. */
function exhaustiveTop10({ q, match }: { q: string; match: "all" | "any" }): number[] {
  const handle = openStore({ store: "bench" });
  return handle.sqlite
    .prepare(`select c.id from chunks_fts join chunks c on c.id = chunks_fts.rowid where chunks_fts match ? order by bm25(chunks_fts), c.id limit 10`)
    .pluck()
    .all(buildFtsMatch(q, { match })) as number[];
}

/**
 * In process, the route's own call (searchStore, fts, limit 10, default
 * grouping): the first call of each query, the second (scores memoized by
 * the first), then ROUNDS more
 * (p50/p95: what a repeated query costs); agreement is the
 * mean overlap@10 of the chunk search's (group=chunk, plain bm25) top 10 chunk ids with exhaustiveTop10
 * (|A ∩ B| / 10), and how many queries have the identical ordered list.
 */
async function inProcess(size: number): Promise<Record<string, string | number>[]> {
  // A first broad call scores every match and can pass the default 1 s budget on a busy machine: time it rather than refuse it.
  const savedBudget = process.env.DUALMIND_QUERY_BUDGET_MS;
  process.env.DUALMIND_QUERY_BUDGET_MS = String(IN_PROCESS_BUDGET_MS);
  resetConfigForTests();
  try {
    return await measureInProcess(size);
  } finally {
    if (savedBudget === undefined) delete process.env.DUALMIND_QUERY_BUDGET_MS;
    else process.env.DUALMIND_QUERY_BUDGET_MS = savedBudget;
    resetConfigForTests();
  }
}

async function measureInProcess(size: number): Promise<Record<string, string | number>[]> {
  const handle = openStore({ store: "bench" });
  const sets: [string, string[], "all" | "any"][] = [
    ["broad: 8 queries of 2–3 words in every document, match=all", BROAD_SET, "all"],
    ["broad: same 8 queries, match=any", BROAD_SET, "any"],
    ["selective: 8 queries item<n>", Array.from({ length: 8 }, (_, i) => `item${(i * 1237 + 42) % size}`), "all"],
  ];
  const rows: Record<string, string | number>[] = [];
  for (const [name, qs, match] of sets) {
    const samples: number[] = [];
    const firstCalls: number[] = [];
    const secondCalls: number[] = [];
    let overlap = 0;
    let identical = 0;
    for (const q of qs) {
      const input = searchInputSchema.parse({ q, mode: "fts", limit: 10, match });
      for (const first of [firstCalls, secondCalls]) {
        const t = performance.now();
        await searchStore({ handle, core: null, input });
        first.push(performance.now() - t);
      }
      for (let r = 0; r < ROUNDS; r++) {
        const t = performance.now();
        await searchStore({ handle, core: null, input });
        samples.push(performance.now() - t);
      }
      // The chunk leg as FTS5 ranks it (plain bm25: no exact-form or proximity factor).
      const got = (await searchStore({ handle, core: null, input: { ...input, group: "chunk" }, tuning: { exactFormBoost: 0, proximity: { weight: 0, window: 5 } } })).results.map((h) => h.id);
      const want = exhaustiveTop10({ q, match });
      overlap += got.filter((id) => want.includes(id)).length / Math.max(1, want.length);
      if (got.join() === want.join()) identical++;
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    rows.push({ documents: size, queries: name, "1st call ms (mean)": mean(firstCalls), "2nd call ms (mean)": mean(secondCalls), "later runs": samples.length, "p50 ms": percentile(samples, 50), "p95 ms": percentile(samples, 95), "overlap@10 vs exhaustive bm25": overlap / qs.length, "identical top 10": `${identical}/${qs.length}` });
  }
  return rows;
}

/** CONCURRENCY clients in a closed loop for SECONDS, after WARMUP_REQUESTS; latency per request; errors by status ("network" when no answer). */
export async function hammer(url: string, headers: Record<string, string>, settleMs = 0): Promise<{ rps: number; p50: number; p95: number; errors: number; errorsByStatus: Record<string, number> }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let samples: number[] = [];
  let errors = 0;
  let errorsByStatus: Record<string, number> = {};
  const failed = (status: string) => {
    errors++;
    errorsByStatus[status] = (errorsByStatus[status] ?? 0) + 1;
  };
  const one = () =>
    new Promise<void>((resolve) => {
      const t = performance.now();
      http
        .get(url, { agent, headers }, (res) => {
          res.resume();
          res.on("end", () => {
            if (res.statusCode !== 200) failed(String(res.statusCode));
            samples.push(performance.now() - t);
            resolve();
          });
        })
        .on("error", () => {
          failed("network");
          resolve();
        });
    });
  for (let i = 0; i < WARMUP_REQUESTS; i++) await one();
  if (settleMs > 0) await new Promise((r) => setTimeout(r, settleMs));
  samples = [];
  errors = 0;
  errorsByStatus = {};
  const until = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) await one();
    }),
  );
  agent.destroy();
  return { rps: samples.length / ((performance.now() - started) / 1000), p50: percentile(samples, 50), p95: percentile(samples, 95), errors, errorsByStatus };
}

/** The same DB call as the search route, served by node:http with nothing else in the way. */
async function startBareServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const port = PORT !== undefined ? PORT + 1 : await freePort();
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    try {
      const handle = openStore({ store: "bench" });
      const input = searchInputSchema.parse(Object.fromEntries(url.searchParams));
      const body = JSON.stringify(await searchStore({ handle, core: openCoreFor({ handle, includeCore: input.include_core }), input }));
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

export default async function apiBench(): Promise<void> {
  ensureProductionBuild();
  const rows: Record<string, string | number>[] = [];
  const local: Record<string, string | number>[] = [];
  // Broad: two words in every document (bm25 ranks them all); selective: one document's unique word.
  const queries = [
    ["broad", `/stores/bench/search?q=${encodeURIComponent("rotation ledger")}&mode=fts&limit=10`],
    ["selective", `/stores/bench/search?q=item4242&mode=fts&limit=10`],
  ] as const;
  for (const size of SIZES) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-api-"));
    try {
      seed(dataDir, size);
      // The worker would compete for the CPU with the measured requests.
      // Without lists (BENCH_API_WORD_LISTS=0), the server must not build them mid-run either.
      const next = await startServer({ dataDir, env: { DUALMIND_EMBED_WORKER: "false", ...(process.env.BENCH_API_WORD_LISTS === "0" ? { DUALMIND_WORD_LISTS_MIN_ROWS: "0" } : {}) }, port: PORT });
      const auth = { authorization: `Bearer ${RELIABILITY_TOKEN}` };
      let bare: Awaited<ReturnType<typeof startBareServer>> | null = null;
      try {
        const runs: [string, string, Record<string, string>, number][] = [
          ["Next: GET /health (select 1, framework ceiling)", `${next.url}/api/v1/health`, {}, 0],
          ...queries.map(([kind, q]): [string, string, Record<string, string>, number] => [`Next: GET /stores/{store}/search, ${kind} query`, `${next.url}/api/v1${q}`, auth, 0]),
          [`Next: GET /stores/{store}/search, broad query, steady (${SETTLE_MS / 1000} s idle after the warm-up)`, `${next.url}/api/v1${queries[0][1]}`, auth, SETTLE_MS],
        ];
        for (const [name, url, headers, settle] of runs) {
          const r = await hammer(url, headers, settle);
          rows.push({ documents: size, server: name, "req/s": r.rps, "p50 ms": r.p50, "p95 ms": r.p95, errors: r.errors });
        }
      } finally {
        await next.stop();
      }
      process.env.DATA_DIR = dataDir;
      resetConfigForTests();
      getStoreDb({ store: "bench" });
      bare = await startBareServer();
      for (const [kind, q, settle] of [...queries.map(([kind, q]) => [kind, q, 0] as const), [`${queries[0][0]}, steady`, queries[0][1], SETTLE_MS] as const]) {
        const r = await hammer(`${bare.url}${q.replace("/stores/bench/search", "/")}`, {}, settle);
        rows.push({ documents: size, server: `bare node:http, same searchStore call, ${kind} query`, "req/s": r.rps, "p50 ms": r.p50, "p95 ms": r.p95, errors: r.errors });
      }
      await bare.close();
      local.push(...(await inProcess(size)));
      closeAllDatabases();
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  printTable(`API throughput: ${CONCURRENCY} keep-alive clients for ${SECONDS} s each on 127.0.0.1 after ${WARMUP_REQUESTS} untimed requests, fts, limit 10; broad = "rotation ledger" (in every document), selective = "item4242"`, rows);
  printTable(`In process: searchStore as the route calls it (fts, limit 10), first and second call, then ${ROUNDS} more per query (query budget ${IN_PROCESS_BUDGET_MS / 1000} s); agreement = mean overlap@10 of the top 10 chunk ids with FTS5 scoring every match`, local);
}
