import { sql } from "drizzle-orm";
import { dialect, read, sqlRows, type AnyStoreHandle, type On } from "../db/port";
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

type Totals = { hits: number; atCeiling: number; traces: number; learnings: number; rated: number; relevant: number };

/**
 * The score distribution of the store's recall hits, newest first, in bins of
 * SCORE_BIN_WIDTH over [0, 1]: one grouped query over a bounded sample. A
 * score of exactly 1 falls in the top bin.
 */
export function getRecallScoreDistribution<H extends AnyStoreHandle>({ handle, limit = SCORE_SAMPLE_LIMIT }: { handle: H; limit?: number }): On<H, RecallScoreDistribution> {
  return read(handle, function* () {
    const sample = sql`(select score, artifact, relevant from recall_event_hits order by id desc limit ${limit}) s`;
    // Scores are never negative: SQLite's integer cast truncates as PostgreSQL's floor does.
    const bin = (yield* dialect()) === "sqlite" ? sql`min(cast(score / ${SCORE_BIN_WIDTH} as integer), ${BINS - 1})` : sql`least(floor(score / ${SCORE_BIN_WIDTH}::float8)::int, ${BINS - 1}::int)`;
    const rows = yield* sqlRows<{ bin: number; n: number }>(sql`select ${bin} as bin, count(*) as n from ${sample} group by 1`);
    const [totals] = yield* sqlRows<Totals>(
      sql`select count(*) as hits, count(*) filter (where abs(score - ${LEXICAL_CEILING}) < 0.0005) as "atCeiling",
            count(*) filter (where artifact = 'trace') as traces, count(*) filter (where artifact = 'learning') as learnings,
            count(*) filter (where relevant is not null) as rated, count(*) filter (where relevant) as relevant
          from ${sample}`,
    );
    const numbers = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Number(v)])) as T;
    return distributionOf({ rows: rows.map(numbers), totals: numbers(totals) });
  });
}

/** The histogram and totals from the grouped rows. */
function distributionOf({ rows, totals }: { rows: BinRow[]; totals: Totals }): RecallScoreDistribution {
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
