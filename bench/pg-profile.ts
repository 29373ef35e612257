/**
 * Where a PostgreSQL full-text search's time goes, on a store pg.bench.ts kept
 * (BENCH_PG_KEEP): every statement a search sends (a round trip each), timed
 * at the client, and EXPLAIN (ANALYZE, BUFFERS) of the slowest ones.
 *
 *   BENCH_PG_URL=postgres://dualmind@127.0.0.1:<port>/bench_pg_100000 npx tsx bench/pg-profile.ts "export string" "content selectposts"
 *
 * BENCH_PG_GROUP=chunk profiles group=chunk (default: the route's group=document); BENCH_PG_EXPLAIN=0 skips the plans.
 * Without queries: pg.bench.ts's own two-word queries for BENCH_PG_SIZE notes (default 100000), each run once,
 * then the slowest BENCH_PG_SLOWEST of them (default 5) profiled as above.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { pgEngine } from "../lib/db/engine";
import { closePgHandle, openPgHandle } from "../lib/db/pg";
import { searchInputSchema } from "../lib/index/search";
import { storesOn } from "../lib/stores/backend";
import { loadTextWindows } from "./corpus";
import { twoWordQueries } from "./pg.bench";

type Sent = { text: string; values: unknown[]; ms: number };

async function main(): Promise<void> {
  const url = process.env.BENCH_PG_URL;
  if (!url) throw new Error("set BENCH_PG_URL to the kept bench database");
  process.env.DATA_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-pg-profile-"));
  process.env.DUALMIND_LOG_LEVEL = "error";
  const group = process.env.BENCH_PG_GROUP ?? "document";
  let queries = process.argv.slice(2);
  let sent: Sent[] | null = null;
  const proto = Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: Client, ...args: unknown[]) {
    const first = args[0] as string | { text: string; values?: unknown[] };
    const text = typeof first === "string" ? first : first.text;
    const values = Array.isArray(args[1]) ? (args[1] as unknown[]) : typeof first === "string" ? [] : (first.values ?? []);
    const started = performance.now();
    const out = original.apply(this, args);
    if (sent && out instanceof Promise) {
      const log = sent;
      return out.then((r) => (log.push({ text, values, ms: performance.now() - started }), r));
    }
    return out;
  };
  const pg = await openPgHandle({ url, max: 2 });
  try {
    const backend = storesOn(pgEngine(pg));
    if (queries.length === 0) queries = await slowestOf({ backend, group });
    for (const q of queries) {
      const input = searchInputSchema.parse({ q, mode: "fts", limit: 10, group });
      await backend.search({ store: "bench", input });
      const samples: number[] = [];
      let last: Sent[] = [];
      for (let i = 0; i < 5; i++) {
        sent = [];
        const t0 = performance.now();
        await backend.search({ store: "bench", input });
        samples.push(performance.now() - t0);
        last = sent;
        sent = null;
      }
      samples.sort((a, b) => a - b);
      process.stdout.write(`\n### "${q}" group=${group}: ${samples.map((s) => s.toFixed(1)).join(" / ")} ms; ${last.length} statements (round trips), ${last.reduce((s, x) => s + x.ms, 0).toFixed(1)} ms at the client\n`);
      for (const s of last) process.stdout.write(`${s.ms.toFixed(2).padStart(8)} ms  ${s.text.replace(/\s+/g, " ").slice(0, 150)}\n`);
      if (process.env.BENCH_PG_EXPLAIN === "0") continue;
      const slow = [...last].sort((a, b) => b.ms - a.ms).slice(0, 3).filter((s) => /^\s*(select|with)/i.test(s.text));
      const client = await pg.pool.connect();
      try {
        await client.query("begin isolation level repeatable read read only");
        await client.query("select set_config('search_path', 'store_bench, public', true)");
        for (const s of slow) {
          const plan = await client.query({ text: `explain (analyze, buffers, costs off) ${s.text}`, values: s.values as unknown[] });
          process.stdout.write(`\n-- ${s.ms.toFixed(2)} ms: ${s.text.replace(/\s+/g, " ").slice(0, 300)}\n${plan.rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n")}\n`);
        }
        await client.query("rollback");
      } finally {
        client.release();
      }
    }
  } finally {
    await closePgHandle(pg);
    fs.rmSync(process.env.DATA_DIR!, { recursive: true, force: true });
  }
}

/** pg.bench.ts's two-word queries, each timed once: their p50 and p95, and the slowest BENCH_PG_SLOWEST, slowest first. */
async function slowestOf({ backend, group }: { backend: ReturnType<typeof storesOn>; group: string }): Promise<string[]> {
  const all = twoWordQueries(loadTextWindows(20_000), Number(process.env.BENCH_PG_SIZE ?? 100_000));
  const timed: { q: string; ms: number }[] = [];
  for (const q of all) {
    const t0 = performance.now();
    await backend.search({ store: "bench", input: searchInputSchema.parse({ q, mode: "fts", limit: 10, group }) }).catch(() => null);
    timed.push({ q, ms: performance.now() - t0 });
  }
  timed.sort((a, b) => b.ms - a.ms);
  const at = (p: number) => timed[Math.min(timed.length - 1, Math.floor(((100 - p) / 100) * timed.length))].ms.toFixed(1);
  process.stdout.write(`${timed.length} two-word queries, group=${group}: p50 ${at(50)} ms, p95 ${at(95)} ms\n`);
  return timed.slice(0, Number(process.env.BENCH_PG_SLOWEST ?? 5)).map((t) => t.q);
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
