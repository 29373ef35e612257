import type { StoreHandle } from "../db/connection";
import { LEXICAL_SCALE } from "./recall";

/** Width of one bin of the score histogram. */
export const SCORE_BIN_WIDTH = 0.05;
export const BINS = Math.round(1 / SCORE_BIN_WIDTH);
/** The distribution reads at most this many of the newest hits (a bounded cost on a busy store). */
export const SCORE_SAMPLE_LIMIT = 5_000;

export type ScoreBin = { lo: number; hi: number; count: number };
export type RecallScoreDistribution = {
  /** Hits read (the newest, at most SCORE_SAMPLE_LIMIT). */
  hits: number;
  bins: ScoreBin[];
  /** Hits scoring exactly the lexical ceiling (every query term found, no vector): why so many scores read 0.500. */
  atLexicalCeiling: number;
  byArtifact: { trace: number; learning: number };
  rated: number;
  relevant: number;
};

/** The lexical ceiling: a lexical match with every query term, at full recency, scores LEXICAL_SCALE. */
export const LEXICAL_CEILING = LEXICAL_SCALE;

export type BinRow = { bin: number; n: number };

/**
 * The score distribution of the store's recall hits, newest first, in bins of
 * SCORE_BIN_WIDTH over [0, 1]: one grouped query over a bounded sample. A
 * score of exactly 1 falls in the top bin.
 */
export function getRecallScoreDistribution({ handle, limit = SCORE_SAMPLE_LIMIT }: { handle: StoreHandle; limit?: number }): RecallScoreDistribution {
  const sample = "(select score, artifact, relevant from recall_event_hits order by id desc limit @limit)";
  const rows = handle.sqlite
    .prepare(`select min(cast(score / @width as integer), @top) as bin, count(*) as n from ${sample} group by bin`)
    .all({ limit, width: SCORE_BIN_WIDTH, top: BINS - 1 }) as BinRow[];
  const totals = handle.sqlite
    .prepare(
      `select count(*) as hits, coalesce(sum(abs(score - @ceiling) < 0.0005), 0) as atCeiling,
              coalesce(sum(artifact = 'trace'), 0) as traces, coalesce(sum(artifact = 'learning'), 0) as learnings,
              coalesce(sum(relevant is not null), 0) as rated, coalesce(sum(relevant = 1), 0) as relevant
       from ${sample}`,
    )
    .get({ limit, ceiling: LEXICAL_CEILING }) as { hits: number; atCeiling: number; traces: number; learnings: number; rated: number; relevant: number };
  return distributionOf({ rows, totals });
}

/** The histogram and totals from the grouped rows (both backends). */
export function distributionOf({ rows, totals }: { rows: BinRow[]; totals: { hits: number; atCeiling: number; traces: number; learnings: number; rated: number; relevant: number } }): RecallScoreDistribution {
  const counts = new Map(rows.map((r) => [Math.max(0, r.bin), r.n]));
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    hits: totals.hits,
    bins: Array.from({ length: BINS }, (_, i) => ({ lo: round(i * SCORE_BIN_WIDTH), hi: round((i + 1) * SCORE_BIN_WIDTH), count: counts.get(i) ?? 0 })),
    atLexicalCeiling: totals.atCeiling,
    byArtifact: { trace: totals.traces, learning: totals.learnings },
    rated: totals.rated,
    relevant: totals.relevant,
  };
}
