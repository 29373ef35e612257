import { sql } from "drizzle-orm";
import { withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { BINS, distributionOf, LEXICAL_CEILING, SCORE_BIN_WIDTH, SCORE_SAMPLE_LIMIT, type RecallScoreDistribution } from "./quality";

/** The score distribution of the store's newest recall hits on PostgreSQL (see getRecallScoreDistribution, ./quality.ts). */
export async function getRecallScoreDistributionPg({ handle, limit = SCORE_SAMPLE_LIMIT }: { handle: PgStoreHandle; limit?: number }): Promise<RecallScoreDistribution> {
  const sample = sql`(select score, artifact, relevant from recall_event_hits order by id desc limit ${limit}) s`;
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const bins = await tx.execute(sql`select least(floor(score / ${SCORE_BIN_WIDTH}::float8)::int, ${BINS - 1}::int) as bin, count(*)::int as n from ${sample} group by 1`);
    const totals = await tx.execute(
      sql`select count(*)::int as hits, (count(*) filter (where abs(score - ${LEXICAL_CEILING}::float8) < 0.0005))::int as "atCeiling",
            (count(*) filter (where artifact = 'trace'))::int as traces, (count(*) filter (where artifact = 'learning'))::int as learnings,
            (count(*) filter (where relevant is not null))::int as rated, (count(*) filter (where relevant))::int as relevant
          from ${sample}`,
    );
    return distributionOf({ rows: bins.rows as { bin: number; n: number }[], totals: totals.rows[0] as Parameters<typeof distributionOf>[0]["totals"] });
  });
}
