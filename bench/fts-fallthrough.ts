import path from "node:path";
import { loadTextWindows, noteAt } from "./corpus";
import { percentile, printTable } from "./table";

/**
 * Whether remember's and recall's FTS tables (thoughts_fts, kg_node_fts,
 * traces_fts, learnings_fts: no word lists) would need them: their any-word
 * leg is selectiveTopByBm25 first, then FTS5 scoring every match. On a kept
 * 100k-note store (BENCH_INDEX_KEEP of the index bench, its chunks_fts
 * standing in for a big thoughts table), queries of remember's shape (a
 * note's opening words, up to 16, any-word) and of a person's two words:
 * how many the pruning leaves to FTS5, and what those cost ranked by FTS5
 * beside ranked from chunks_fts's word lists. Every memo cleared before
 * each call (first sight).
 *
 *   FTS_KEEP=/tmp/ftskeep/100000 npx tsx bench/fts-fallthrough.ts
 */
async function main(): Promise<void> {
  const keep = process.env.FTS_KEEP ?? "/tmp/ftskeep/100000";
  Object.assign(process.env, { DATA_DIR: keep, DUALMIND_DISABLE_VECTORS: "true", DUALMIND_EMBED_WORKER: "false", DUALMIND_QUERY_BUDGET_MS: "60000" });
  const { openStore } = await import("../lib/stores/stores");
  const { broadTopByBm25, clearFullTextMemos, matchExpression, matchTerms, selectiveTopByBm25 } = await import("../lib/retrieval");
  const { closeAllDatabases } = await import("../lib/db/connection");
  const db = openStore({ store: "api" }).sqlite;
  const windows = loadTextWindows(Number.MAX_SAFE_INTEGER);
  const count = db.prepare("select count(*) from documents").pluck().get() as number;
  const texts = Array.from({ length: 200 }, (_, j) => noteAt({ windows, index: Math.floor((j * count) / 200) }).text.replace(/^# .*\n/, ""));
  const shapes = {
    "remember-like: a note's opening, up to 16 words, any": texts.map((t) => matchTerms(t.split(/\s+/).slice(0, 12).join(" "), { maxTerms: 16 })),
    "two words, any": texts.map((t) => matchTerms(t, { maxTerms: 64 }).filter((w) => w.length >= 6).filter((_, i, a) => i === Math.floor(a.length / 3) || i === Math.floor((2 * a.length) / 3))),
  };
  const exhaustive = db.prepare("select rowid, bm25(chunks_fts) as rank from chunks_fts where chunks_fts match ? order by rank, rowid limit 25");
  const rows: Record<string, string | number>[] = [];
  for (const [shape, queries] of Object.entries(shapes)) {
    const selective: number[] = [];
    const fts5: number[] = [];
    const lists: number[] = [];
    let fell = 0;
    let same = 0;
    let asked = 0;
    for (const terms of queries) {
      const match = matchExpression(terms, "any");
      if (!match || terms.length < 2) continue;
      asked++;
      clearFullTextMemos();
      let t = performance.now();
      const pruned = selectiveTopByBm25({ db, schema: "main", table: "chunks_fts", terms, k: 25 });
      selective.push(performance.now() - t);
      if (pruned) continue;
      fell++;
      t = performance.now();
      const want = exhaustive.all(match) as { rowid: number; rank: number }[];
      fts5.push(performance.now() - t);
      clearFullTextMemos();
      t = performance.now();
      const got = broadTopByBm25({ db, schema: "main", table: "chunks_fts", match })?.top(25) ?? (exhaustive.all(match) as { rowid: number; rank: number }[]);
      lists.push(performance.now() - t);
      if (JSON.stringify(got) === JSON.stringify(want)) same++;
    }
    const p = (xs: number[]) => (xs.length ? `${percentile(xs, 50).toFixed(1)} / ${percentile(xs, 95).toFixed(1)}` : "—");
    rows.push({ queries: shape, asked, "pruning p50 / p95 ms": p(selective), "left to FTS5": fell, "those by FTS5 p50 / p95 ms": p(fts5), "those from word lists p50 / p95 ms": p(lists), "same top 25": `${same}/${fell}` });
  }
  closeAllDatabases();
  printTable(`Any-word queries the pruning leaves to FTS5, on chunks_fts of ${count} notes (${path.basename(keep)}), first sight`, rows);
}

void main();
