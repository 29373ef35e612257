import { sql } from "drizzle-orm";

/** The vector made from a trace's or learning's current text: the model fingerprint, dimension and task that made it. */
export type VectorInfo = { fingerprint_id: string; dim: number; task: "document" | "query" };

type VectorOf = { kind: "trace" | "learning"; table: "reasoning_traces" | "learnings"; inputHashColumn: "descriptor_hash" | "handle_hash" };

/**
 * A select column: the newest vector of a trace or learning whose input is
 * still current, as JSON ({ fingerprint_id, dim, task }; text on SQLite, an
 * object on PostgreSQL: read it with vectorInfoOf), or null. The outer table
 * is written by name because in a single-table select Drizzle leaves columns
 * unqualified, so `id` inside the subquery would mean embeddings.id. The
 * embeddings tables differ per engine (dim and row order).
 */
export function currentVectorInfo(engine: "sqlite" | "pg", { kind, table, inputHashColumn }: VectorOf) {
  // Identifiers come from the literal types above, never from a request.
  const outer = sql.raw(`"${table}"."id"`);
  const hash = sql.raw(`"${table}"."${inputHashColumn}"`);
  if (engine === "pg") {
    return sql<unknown>`(select json_build_object('fingerprint_id', e.fingerprint_id, 'dim', e.dimension, 'task', e.task) from embeddings e
      where e.kind = ${kind} and e.ref_id = ${outer} and e.input_hash = ${hash} order by e.embedded_at desc limit 1)`;
  }
  return sql<unknown>`(select json_object('fingerprint_id', e.fingerprint_id, 'dim', e.dim, 'task', e.task) from embeddings e
    where e.kind = ${sql.raw(`'${kind}'`)} and e.ref_id = ${outer} and e.input_hash = ${hash} order by e.id desc limit 1)`;
}

/** The column currentVectorInfo selected, decoded. */
export function vectorInfoOf(v: unknown): VectorInfo | null {
  if (v === null || v === undefined) return null;
  return (typeof v === "string" ? JSON.parse(v) : v) as VectorInfo;
}

/** A list or object column: JSON text on SQLite, an array or json on PostgreSQL. */
export function decodedJson<T>(v: unknown): T {
  return (typeof v === "string" ? JSON.parse(v) : v) as T;
}

/** A list or object as the engine's column takes it: JSON text on SQLite, the value itself on PostgreSQL (typed as the SQLite row's text). */
export function encodedJson(engine: "sqlite" | "pg", v: unknown): string {
  return (engine === "sqlite" ? JSON.stringify(v) : v) as string;
}

/** A column set to the larger of itself and `v` (SQLite's `max(a, b)`, PostgreSQL's `greatest(a, b)`; both read this). */
export function atLeast(column: string, v: number, type: "double precision" | "bigint" = "double precision") {
  const value = sql`cast(${v} as ${sql.raw(type)})`;
  return sql`case when ${sql.raw(column)} > ${value} then ${sql.raw(column)} else ${value} end`;
}
