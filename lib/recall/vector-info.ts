import { desc, getTableColumns, getTableName, sql, type SQL } from "drizzle-orm";
import { dialect, select, type Op, type RowOf } from "../db/port";
import type { recallTables } from "./tables";

/** The vector made from a trace's or learning's current text: the model fingerprint, dimension and task that made it. */
export type VectorInfo = { fingerprint_id: string; dim: number; task: "document" | "query" };

type Recorded = typeof recallTables.traces | typeof recallTables.learnings;
const VECTOR_OF = {
  reasoning_traces: { kind: "trace", inputHashColumn: "descriptor_hash" },
  learnings: { kind: "learning", inputHashColumn: "handle_hash" },
} as const;

/**
 * Traces or learnings, newest seen first (the API's order), each with the
 * newest vector whose input is still its current text ({ fingerprint_id, dim,
 * task }, or null). The subquery names the outer table itself: in a
 * single-table select Drizzle leaves columns unqualified, so `id` inside it
 * would mean embeddings.id. The embeddings tables differ per engine (dim and row order).
 */
export function* withCurrentVector<T extends Recorded>({ pair, where, limit, offset = 0 }: { pair: T; where?: (t: T["sqlite"]) => SQL | undefined; limit: number; offset?: number }): Op<(RowOf<T> & { vector: VectorInfo | null })[]> {
  const engine = yield* dialect();
  const table = getTableName(pair.sqlite) as keyof typeof VECTOR_OF;
  const { kind, inputHashColumn } = VECTOR_OF[table];
  // Identifiers come from the constants above, never from a request.
  const outer = sql.raw(`"${table}"."id"`);
  const hash = sql.raw(`"${table}"."${inputHashColumn}"`);
  const info =
    engine === "pg"
      ? sql<unknown>`(select json_build_object('fingerprint_id', e.fingerprint_id, 'dim', e.dimension, 'task', e.task) from embeddings e
      where e.kind = ${kind} and e.ref_id = ${outer} and e.input_hash = ${hash} order by e.embedded_at desc limit 1)`
      : sql<unknown>`(select json_object('fingerprint_id', e.fingerprint_id, 'dim', e.dim, 'task', e.task) from embeddings e
    where e.kind = ${sql.raw(`'${kind}'`)} and e.ref_id = ${outer} and e.input_hash = ${hash} order by e.id desc limit 1)`;
  const found = yield* select({ t: pair as Recorded }, (db, { t }) =>
    db
      .select({ ...getTableColumns(t as typeof recallTables.learnings.sqlite), vectorInfo: info })
      .from(t as typeof recallTables.learnings.sqlite)
      .where(where?.(t as T["sqlite"]))
      .orderBy(desc(t.lastSeenAt), desc(t.id))
      .limit(limit)
      .offset(offset),
  );
  return found.map(({ vectorInfo, ...r }) => ({ ...(r as RowOf<T>), vector: vectorInfo === null || vectorInfo === undefined ? null : decodedJson<VectorInfo>(vectorInfo) }));
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
