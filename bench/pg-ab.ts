/**
 * PostgreSQL full-text search before beside after, query by query in one
 * process, on a store pg.bench.ts kept (BENCH_PG_KEEP): the search of a
 * baseline checkout (BENCH_PG_BASELINE, e.g. `git archive <commit> | tar -x -C
 * <dir>` with node_modules linked) and this checkout's, each query run by both
 * in turn (the order alternating), so both see the same load on a shared
 * machine. Prints each side's p50/p95 for pg.bench.ts's two-word queries and
 * the broad query, the statements (round trips) a search sends, and how many
 * answers were the same (ids and scores to 4 decimals).
 *
 *   BENCH_PG_BASELINE=/tmp/main BENCH_PG_URL=postgres://dualmind@127.0.0.1:<port>/bench_pg_100000 npx tsx bench/pg-ab.ts
 *
 * BENCH_PG_GROUP=chunk: group=chunk (default: the route's group=document); BENCH_PG_SIZE: the kept size (100000);
 * BENCH_PG_BASELINE_URL: the baseline's own database (e.g. a copy made by `create database … template …` before a
 * migration of this checkout changes it; default BENCH_PG_URL).
 * Queries after the command: those instead, each BENCH_PG_REPEAT times (default 3).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { loadTextWindows } from "./corpus";
import { twoWordQueries } from "./pg.bench";

type Side = {
  name: string;
  search: (q: string) => Promise<{ results: { id: number; score: number }[] }>;
  close: () => Promise<void>;
  twoWord: number[];
  broad: number[];
  statements: number[];
  refused: number;
};

let sent: number | null = null;
const proto = Client.prototype as unknown as { query: (...a: unknown[]) => unknown };
const original = proto.query;
proto.query = function (this: Client, ...args: unknown[]) {
  if (sent !== null) sent++;
  return original.apply(this, args);
};

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

/** One checkout's search over the kept store (its own modules, its own pool). */
async function sideOf({ name, root, url, group }: { name: string; root: string; url: string; group: string }): Promise<Side> {
  const at = (p: string) => import(path.join(root, p));
  const [{ pgEngine }, { openPgHandle, closePgHandle }, { searchInputSchema }, { storesOn }] = await Promise.all([at("lib/db/engine.ts"), at("lib/db/pg.ts"), at("lib/index/search.ts"), at("lib/stores/backend.ts")]);
  const pg = await openPgHandle({ url, max: 2 });
  const backend = storesOn(pgEngine(pg));
  return {
    name,
    search: (q) => backend.search({ store: "bench", input: searchInputSchema.parse({ q, mode: "fts", limit: 10, group }) }),
    close: () => closePgHandle(pg),
    twoWord: [],
    broad: [],
    statements: [],
    refused: 0,
  };
}

async function main(): Promise<void> {
  const url = process.env.BENCH_PG_URL;
  const baseline = process.env.BENCH_PG_BASELINE;
  if (!url || !baseline) throw new Error("set BENCH_PG_URL (the kept bench database) and BENCH_PG_BASELINE (a checkout to compare with)");
  process.env.DATA_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-pg-ab-"));
  process.env.DUALMIND_LOG_LEVEL = "error";
  const group = process.env.BENCH_PG_GROUP ?? "document";
  const broad = "export string";
  // Queries given on the command line (each run BENCH_PG_REPEAT times, default 3) instead of the bench's.
  const given = process.argv.slice(2).flatMap((q) => Array<string>(Number(process.env.BENCH_PG_REPEAT ?? 3)).fill(q));
  const queries = given.length ? given : [...twoWordQueries(loadTextWindows(20_000), Number(process.env.BENCH_PG_SIZE ?? 100_000)), ...Array<string>(10).fill(broad)];
  const sides = [await sideOf({ name: `before (${baseline})`, root: path.resolve(baseline), url: process.env.BENCH_PG_BASELINE_URL ?? url, group }), await sideOf({ name: "after (this checkout)", root: process.cwd(), url, group })];
  try {
    for (const side of sides) await side.search(queries[0]).catch(() => null);
    let same = 0;
    // Given queries: each one's times on each side, for a line per query.
    const byQuery = new Map<string, number[][]>();
    for (const [i, q] of queries.entries()) {
      const answers: string[] = [];
      for (const side of i % 2 ? [...sides].reverse() : sides) {
        sent = 0;
        const started = performance.now();
        const answer = await side.search(q).then(
          (r) => JSON.stringify(r.results.map((h) => [h.id, h.score.toFixed(4)])),
          (e: Error) => (side.refused++, e.message),
        );
        const ms = performance.now() - started;
        (q === broad ? side.broad : side.twoWord).push(ms);
        (byQuery.get(q) ?? byQuery.set(q, sides.map(() => [])).get(q)!)[sides.indexOf(side)].push(ms);
        side.statements.push(sent);
        sent = null;
        answers.push(answer);
      }
      if (answers[0] === answers[1]) same++;
    }
    const f = (n: number) => n.toFixed(1);
    process.stdout.write(`group=${group}, load average (1 min) at the end ${os.loadavg()[0].toFixed(1)}\n`);
    for (const s of sides) {
      process.stdout.write(
        `${s.name}: ${s.twoWord.length} ${given.length ? "given" : "two-word"}${s.twoWord.length ? ` p50 ${f(percentile(s.twoWord, 50))} / p95 ${f(percentile(s.twoWord, 95))} ms` : ""}${s.broad.length ? `; broad "${broad}" (${s.broad.length}) p50 ${f(percentile(s.broad, 50))} / p95 ${f(percentile(s.broad, 95))} ms` : ""}; statements a search (median) ${percentile(s.statements, 50)}; refused ${s.refused}\n`,
      );
    }
    process.stdout.write(`same answers (ids and scores): ${same}/${queries.length}\n`);
    // Each given query's times, else the slowest BENCH_PG_SLOWEST (default 10) after.
    const lines = [...byQuery].map(([q, times]) => ({ q, p50: times.map((t) => percentile(t, 50)) }));
    const shown = given.length ? lines : lines.sort((a, b) => b.p50[1] - a.p50[1]).slice(0, Number(process.env.BENCH_PG_SLOWEST ?? 10));
    for (const { q, p50 } of shown) process.stdout.write(`"${q}": p50 ${p50.map(f).join(" → ")} ms\n`);
  } finally {
    for (const s of sides) await s.close();
    fs.rmSync(process.env.DATA_DIR!, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
