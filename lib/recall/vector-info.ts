import { sql } from "drizzle-orm";

/**
 * A select column: the newest vector of a trace or learning whose input is
 * still current, as JSON ({ fingerprintId, dim, task }), or null. The outer
 * table is written by name because in a single-table select Drizzle leaves
 * columns unqualified, so `id` inside the subquery would mean embeddings.id.
 */
export function currentVectorInfo({ kind, table, inputHashColumn }: { kind: "trace" | "learning"; table: "reasoning_traces" | "learnings"; inputHashColumn: "descriptor_hash" | "handle_hash" }) {
  // Identifiers come from the literal types above, never from a request.
  const outer = sql.raw(`${table}.id`);
  const hash = sql.raw(`${table}.${inputHashColumn}`);
  return sql<string | null>`(select json_object('fingerprintId', e.fingerprint_id, 'dim', e.dim, 'task', e.task) from embeddings e
    where e.kind = ${sql.raw(`'${kind}'`)} and e.ref_id = ${outer} and e.input_hash = ${hash} order by e.id desc limit 1)`;
}
