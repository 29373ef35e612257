import type Database from "better-sqlite3";
import { broadTopByBm25, clearFullTextMemos, matchExpression, selectiveTopByBm25 } from "../lib/retrieval";
import { rescoredByLastRanking } from "../lib/retrieval/selective-match";
import { percentile } from "./table";

/**
 * The any-word full-text leg of recall and remember (their ranking: max-score
 * pruning with selectiveTopByBm25, then the word lists or FTS5 scoring
 * every match) on words seen for the first time: every cache is cleared
 * before each call. "As before" rescores every seed (selectiveTopByBm25
 * stopEarly: false); the two alternate query by query, under the same load.
 * Agreement: the share of FTS5's own top k (scoring every match) the leg returns.
 */
export function ftsLegFirstSight({ db, table, queries, k }: { db: Database.Database; table: string; queries: string[][]; k: number }): Record<string, string | number>[] {
  const exhaustive = db.prepare(`select rowid, bm25(${table}) as rank from main.${table} where ${table} match ? order by rank, rowid limit ?`);
  const legs = [
    { label: "as before (every seed rescored)", stopEarly: false, ms: [] as number[], overlap: 0, everyWordAnswers: 0, rescored: 0, pruned: 0 },
    { label: "now (rescoring stops once no seed left can reach the k-th score)", stopEarly: true, ms: [] as number[], overlap: 0, everyWordAnswers: 0, rescored: 0, pruned: 0 },
  ];
  let compared = 0;
  for (const [i, terms] of queries.entries()) {
    const match = matchExpression(terms, "any");
    if (!match) continue;
    compared++;
    const truth = (exhaustive.all(match, k) as { rowid: number }[]).map((r) => r.rowid);
    for (let j = 0; j < legs.length; j++) {
      const leg = legs[(i + j) % legs.length];
      clearFullTextMemos();
      const started = performance.now();
      const pruned = selectiveTopByBm25({ db, schema: "main", table, terms, k, stopEarly: leg.stopEarly });
      const broad = pruned ? null : broadTopByBm25({ db, schema: "main", table, match });
      const rows = pruned ? pruned.rows : broad ? broad.top(k) : (exhaustive.all(match, k) as { rowid: number }[]);
      leg.ms.push(performance.now() - started);
      if (pruned && pruned.common.length === terms.length) leg.everyWordAnswers++;
      else if (pruned) {
        leg.pruned++;
        leg.rescored += rescoredByLastRanking();
      }
      const got = new Set(rows.map((r) => r.rowid));
      leg.overlap += truth.length ? truth.filter((r) => got.has(r)).length / truth.length : 1;
    }
  }
  return legs.map((l) => ({
    table,
    "first sight of every word": l.label,
    "p50 ms": percentile(l.ms, 50),
    "p95 ms": percentile(l.ms, 95),
    [`agreement@${k}`]: l.overlap / Math.max(1, compared),
    "answered by the every-word tier": `${l.everyWordAnswers} / ${compared}`,
    "seeds rescored per pruned answer": l.pruned ? l.rescored / l.pruned : 0,
  }));
}
