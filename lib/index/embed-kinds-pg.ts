import { sql, type SQL } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { rowsOf, type PgStoreTx, type SqlRunner } from "../db/pg-store";
import { preparedOnce } from "../db/statements";
import { kindRegistry, type Embeddable, type EmbeddableRef, type EmbeddableText } from "../embed/embeddables";

/** An artifact's current text, the hash its vector must match, and the version of the rules that rendered the text (null: no such rules, as thoughts). */
export type PgEmbeddableText = { text: string; inputHash: string; chunkingVersion: number | null };

/**
 * One embeddable kind on PostgreSQL (the twin of lib/embed/embeddables.ts): how the embed worker reads the current
 * text of queued items of this kind (chunks are built in; other kinds' vectors go to `embeddings`). Kinds register
 * from lib/embeddable-kinds.ts; the worker claims only registered kinds.
 */
export type PgEmbeddable = {
  kind: string;
  /** Artifact type recorded in provenance, e.g. "reasoning_trace". */
  artifactType: string;
  /** Current texts by ref id, read in the worker's transaction; ids missing from the map were deleted (their queue rows are dropped). */
  load(args: { tx: SqlRunner; refIds: number[] }): Promise<Map<number, PgEmbeddableText>>;
  /**
   * A select of `(ref_id, input_hash)`: this kind's artifacts without a vector
   * of `fingerprintId` made from their current text (missing or stale) — what
   * a re-embed towards that model queues (lib/index/reembed-pg.ts). A kind
   * without it is not re-embedded.
   */
  missingVectors?(fingerprintId: string): SQL;
  /**
   * Re-render texts of an older version of the kind's rules, in the caller's
   * transaction (the twin of Embeddable.backfill: a re-embed calls it first,
   * so the vectors it queues are made from today's text). Returns how many
   * rows it re-rendered or merged.
   */
  backfill?(args: { tx: PgStoreTx }): Promise<number>;
};

/**
 * The usual kind: one row per artifact in a store table (its bigint key in `idColumn`, `id` unless named), its text,
 * the hash of that text, and the version of the rules that rendered it (none: provenance records no version). Names
 * are code constants, quoted as identifiers.
 */
export type TableKind = { kind: string; artifactType: string; table: string; idColumn?: string; textColumn: string; hashColumn: string; versionColumn?: string };

export function tableEmbeddablePg({ kind, artifactType, table, idColumn = "id", textColumn, hashColumn, versionColumn }: TableKind): PgEmbeddable {
  const [t, id, text, hash] = [table, idColumn, textColumn, hashColumn].map((n) => sql.identifier(n));
  const version = versionColumn ? sql.identifier(versionColumn) : sql`null::int`;
  return {
    kind,
    artifactType,
    async load({ tx, refIds }) {
      const rows = await rowsOf<{ id: string; text: string; hash: string; version: number | null }>({ tx, query: sql`select ${id} as id, ${text} as text, ${hash} as hash, ${version} as version from ${t} where ${id} in ${refIds}` });
      return new Map(rows.map((r) => [Number(r.id), { text: r.text, inputHash: r.hash, chunkingVersion: r.version }]));
    },
    missingVectors: (fingerprintId) => missingVectorsSql({ kind, table, idColumn, hashColumn, fingerprintId }),
  };
}

/** The same table kind on SQLite (lib/embed/embeddables.ts), read by one statement each. */
export function tableEmbeddable({ kind, artifactType, table, idColumn = "id", textColumn, hashColumn, versionColumn }: TableKind): Embeddable {
  const [t, id, text, hash] = [table, idColumn, textColumn, hashColumn].map((n) => `"${n}"`);
  const statement = (handle: StoreHandle, sql: string) => preparedOnce({ sqlite: handle.sqlite, sql });
  return {
    kind,
    artifactType,
    load: ({ handle, refIds }) =>
      new Map((statement(handle, `select ${id} as id, ${text} as text, ${hash} as inputHash from ${t} where ${id} in (select value from json_each(?))`).all(JSON.stringify(refIds)) as ({ id: number } & EmbeddableText)[]).map(({ id, ...r }) => [id, r])),
    listAll: ({ handle }) => statement(handle, `select ${id} as refId, ${hash} as inputHash from ${t}`).all() as EmbeddableRef[],
    ...(versionColumn ? { chunkingVersion: ({ handle, refId }: { handle: StoreHandle; refId: number }) => (statement(handle, `select "${versionColumn}" as v from ${t} where ${id} = ?`).get(refId) as { v: number | null } | undefined)?.v ?? null } : {}),
  };
}

/** A kind's rows (key `idColumn`, current text hash `hashColumn`) without a vector of `fingerprintId` made from that text: PgEmbeddable.missingVectors. */
export function missingVectorsSql({ kind, table, idColumn, hashColumn, fingerprintId }: { kind: string; table: string; idColumn: string; hashColumn: string; fingerprintId: string }): SQL {
  const [t, id, hash] = [table, idColumn, hashColumn].map((n) => sql.identifier(n));
  return sql`select r.${id} as ref_id, r.${hash} as input_hash from ${t} r left join embeddings e on e.kind = ${kind} and e.ref_id = r.${id} and e.fingerprint_id = ${fingerprintId}
    where e.ref_id is null or e.input_hash <> r.${hash}`;
}

const kinds = kindRegistry<PgEmbeddable>("__dualmindPgEmbeddables");

export const registerPgEmbeddable = kinds.register;

export function getPgEmbeddable(kind: string): PgEmbeddable | undefined {
  return kinds.all().get(kind);
}

export function pgEmbeddableKinds(): string[] {
  return [...kinds.all().keys()];
}
