import type Database from "better-sqlite3";
import { broadTopByBm25, clearFullTextMemos, matchExpression, selectiveTopByBm25 } from "../lib/retrieval";
import { rescoredByLastRanking } from "../lib/retrieval/selective-match";
import { percentile } from "./table";

/**
 * The any-word full-text leg of recall and remember (their ranking: max-score
 * pruning with selectiveTopByBm25, then the word lists or FTS5 scoring
 * every match) on words seen for the first time: every cache is cleared
 * before each call. Agreement: the share of FTS5's own top k (scoring every
 * match) the leg returns.
 */
export function ftsLegFirstSight({ db, table, queries, k }: { db: Database.Database; table: string; queries: string[][]; k: number }): Record<string, string | number>[] {
  const exhaustive = db.prepare(`select rowid, bm25(${table}) as rank from main.${table} where ${table} match ? order by rank, rowid limit ?`);
  const l = { ms: [] as number[], overlap: 0, everyWordAnswers: 0, rescored: 0, pruned: 0 };
  let compared = 0;
  for (const terms of queries) {
    const match = matchExpression(terms, "any");
    if (!match) continue;
    compared++;
    const truth = (exhaustive.all(match, k) as { rowid: number }[]).map((r) => r.rowid);
    clearFullTextMemos();
    const started = performance.now();
    const pruned = selectiveTopByBm25({ db, schema: "main", table, terms, k });
    const broad = pruned ? null : broadTopByBm25({ db, schema: "main", table, match });
    const rows = pruned ? pruned.rows : broad ? broad.top(k) : (exhaustive.all(match, k) as { rowid: number }[]);
    l.ms.push(performance.now() - started);
    if (pruned && pruned.common.length === terms.length) l.everyWordAnswers++;
    else if (pruned) {
      l.pruned++;
      l.rescored += rescoredByLastRanking();
    }
    const got = new Set(rows.map((r) => r.rowid));
    l.overlap += truth.length ? truth.filter((r) => got.has(r)).length / truth.length : 1;
  }
  return [{
    table,
    "p50 ms": percentile(l.ms, 50),
    "p95 ms": percentile(l.ms, 95),
    [`agreement@${k}`]: l.overlap / Math.max(1, compared),
    "answered by the every-word tier": `${l.everyWordAnswers} / ${compared}`,
    "seeds rescored per pruned answer": l.pruned ? l.rescored / l.pruned : 0,
  }];
}
