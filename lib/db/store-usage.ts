import type Database from "better-sqlite3";
import { sql } from "drizzle-orm";
import { sha256Hex } from "../common";
import { getConfig } from "../config";
import { STORE_BYTES_REFUSAL, STORE_BYTES_SQLSTATE } from "../errors";
import type { SqlRunner } from "./pg-store";

/**
 * What one store holds, as one running total kept in the store itself: the
 * `store_usage` row (id 1) of its index.db or its PostgreSQL schema, which
 * DUALMIND_MAX_STORE_BYTES bounds (SECURITY.md, "Limits").
 *
 * Every kind of row a token can make counts: documents (their text bytes, so
 * memories too), categories, chains, thoughts, graph nodes, frames, relations,
 * evidence links, working memory, traces and learnings. A row counts
 * ROW_OVERHEAD_BYTES plus the UTF-8 bytes of the text it holds, so rows with
 * little text (an evidence link) still use up room.
 *
 * What is derived from those rows counts too, so the limit bounds the store's
 * files, not only its text: a document's chunks, and each row that is
 * embedded and full-text indexed (chunks, thoughts, graph nodes, traces,
 * learnings), count a derived row's overhead, their text again for its
 * full-text and word-list entries, and one vector at the configured
 * dimension (DERIVED_COST, per engine; PostgreSQL's full-text rows count per
 * row). They count when the
 * row is written, before the embed worker runs, so the worker's writes are
 * never refused and a write that would not fit is refused whole. The
 * constants were measured (SECURITY.md states the bound: the store's files
 * stay within 1.25 times the limit beyond an empty store's). Not counted,
 * because each has its own bound: recall and search logs (written by reads,
 * kept to DUALMIND_RECALL_LOG_MAX_BYTES and their rows and days) and the
 * memory trash (DUALMIND_MEMORY_TRASH_MAX_BYTES).
 *
 * Triggers on each counted table add what a write adds and take away what a
 * delete removes, in the write's own transaction, whatever code wrote it; a
 * write that grows the store past the limit is refused by the same trigger,
 * so its transaction rolls back (lib/errors.ts turns the refusal into 422
 * naming the variable). A write that does not grow the store (a shorter
 * update, a delete) is never refused, even in a store already past the limit.
 * The limit is the process's setting, asked at the write: a function on a
 * SQLite connection, a transaction setting on PostgreSQL (useStoreSchema).
 *
 * The triggers and the recount are made from the one table list below. They
 * are installed when a store is opened (or migrated) and the store's differ
 * from them (SQLite: the trigger text in the file; PostgreSQL: the schema's
 * `store_usage_version`); installing recounts the total from the rows, and so
 * does a reindex. `verify` compares the total
 * with a recount.
 */
export const ROW_OVERHEAD_BYTES = 64;

/** Identifiers here are fixed table names and validated schema names, quoted. */
const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * A counted table: the text columns whose bytes count, (documents) a number
 * column counted as bytes, and (`derived`) the text that is embedded and
 * full-text indexed, whose derived rows count too.
 */
type Counted = { table: string; text: string[]; number?: string; derived?: string[] };

type Engine = "sqlite" | "pg";

/**
 * What derived rows take, per engine, as measured (filling stores with prose,
 * with short lines, with distinct short words, with memories and with
 * thoughts, then embedding them):
 * - `row`: what a derived row adds beyond its text and vector (the chunk or
 *   queue row's ids and hashes, index entries);
 * - `text`: bytes per byte of indexed text (SQLite: FTS5 and word lists;
 *   PostgreSQL: the row's text search columns and their indexes);
 * - `vector`: bytes per dimension of one embedded row's vectors (float32 in
 *   the store and again in the embedding cache, the ANN or HNSW entry), plus
 *   `vectorRow` for their rows;
 * - `postings`: PostgreSQL's full-text and word-list tables, one row per
 *   distinct word of a chunk, counted per row (with its index entries) by
 *   statement triggers, since their number follows the words, not the bytes.
 * PostgreSQL's are a fifth above what live rows take: a rewrite leaves dead
 * rows and index pages that vacuum makes reusable, not smaller.
 */
export const DERIVED_COST: Record<Engine, { row: number; text: number; vector: number; vectorRow: number; postings: Record<string, number> }> = {
  sqlite: { row: 384, text: 3, vector: 9, vectorRow: 256, postings: {} },
  pg: { row: 640, text: 10, vector: 14, vectorRow: 640, postings: { fts_postings: 232, fts_terms: 116, word_postings: 154, word_terms: 154 } },
};
/** The dimension assumed when the provider does not name one (DUALMIND_EMBED_DIM unset for an external provider). */
const FALLBACK_DIMENSION = 1536;

/** What one embedded row's vectors count on `engine`, at the configured dimension. */
function derivedVectorBytes(engine: Engine, dimension = getConfig().embed.dimension ?? FALLBACK_DIMENSION): number {
  return DERIVED_COST[engine].vector * dimension + DERIVED_COST[engine].vectorRow;
}

/**
 * What a new document's rows will count at least, by the triggers' own rule (its row, and each chunk's row with its
 * indexed text and vector; PostgreSQL's per-word rows come on top): a write of new documents that cannot fit is
 * refused on this before any row is written (lib/index/store-quota.ts).
 */
export function newDocumentLeastBytes({ engine, path, contentBytes, chunkTexts }: { engine: Engine; path: string; contentBytes: number; chunkTexts: string[] }): number {
  const cost = DERIVED_COST[engine];
  const perChunk = ROW_OVERHEAD_BYTES + cost.row + derivedVectorBytes(engine);
  return ROW_OVERHEAD_BYTES + Buffer.byteLength(path, "utf8") + contentBytes + chunkTexts.reduce((n, t) => n + perChunk + (cost.text + 1) * Buffer.byteLength(t, "utf8"), 0);
}

/**
 * At most what replacing the documents at some paths frees (`?`: the list of paths): its row, its chunks' rows with their indexed
 * text and vectors, their posting rows and the words those alone hold. A replacement's least growth is its new
 * rows' least bytes less this, so a replacement that cannot fit either is refused before any row is written.
 */
export function documentFreedMostSql(engine: Engine): string {
  const cost = DERIVED_COST[engine];
  const perChunk = ROW_OVERHEAD_BYTES + cost.row + derivedVectorBytes(engine);
  const doc = `(select sum(${ROW_OVERHEAD_BYTES} + octet_length(d.path) + d.bytes) from documents d where d.path in (?))`;
  const chunks = `(select sum(${perChunk} + ${cost.text + 1} * octet_length(c.text)) from chunks c join documents d on d.doc_id = c.doc_id where d.path in (?))`;
  const parts = [doc, chunks];
  if (engine === "pg") {
    const p = cost.postings;
    // Every posting goes; a word's term row only when these documents hold all its postings (its row count).
    const chunkWords = `select f.term, count(*) as n from fts_postings f join chunks c on c.id = f.chunk_id join documents d on d.doc_id = c.doc_id where d.path in (?) group by f.term`;
    const docWords = `select w.term, count(*) as n from word_postings w join documents d on w.tbl = 'documents' and w.rid = d.doc_id where d.path in (?) group by w.term`;
    parts.push(
      `(select sum(x.n) * ${p.fts_postings} + count(*) filter (where t.rows <= x.n) * ${p.fts_terms} from (${chunkWords}) x left join fts_terms t on t.term = x.term)`,
      `(select sum(x.n) * ${p.word_postings} + count(*) filter (where t.rows <= x.n) * ${p.word_terms} from (${docWords}) x left join word_terms t on t.tbl = 'documents' and t.term = x.term)`,
    );
  }
  return `select ${parts.map((x) => `coalesce(${x}, 0)`).join(" + ")} as freed`;
}

const COUNTED: readonly Counted[] = [
  { table: "documents", text: ["path"], number: "bytes" },
  { table: "chunks", text: [], derived: ["text"] },
  { table: "categories", text: ["path", "description"] },
  { table: "chains", text: ["id"] },
  { table: "thoughts", text: ["id", "content", "tags", "category", "chain_id", "created_by"], derived: ["content"] },
  { table: "kg_node", text: ["id", "name", "display_name", "scope", "attributes", "tags", "created_by"], derived: ["name", "display_name", "tags"] },
  { table: "kg_frame", text: ["id", "node_id", "properties", "created_by"] },
  { table: "kg_relation", text: ["id", "from_id", "to_id", "relationship_type", "attributes", "created_by"] },
  { table: "kg_frame_evidence", text: ["frame_id", "thought_id", "created_by"] },
  { table: "kg_relation_evidence", text: ["relation_id", "thought_id", "created_by"] },
  { table: "working_memory", text: ["key", "value", "updated_by"] },
  { table: "reasoning_traces", text: ["agent_id", "intent_verb", "intent_target", "shard_type", "key_files", "key_issue", "error_tags", "summary_descriptor"], derived: ["summary_descriptor"] },
  { table: "learnings", text: ["agent_id", "predicate", "args", "description", "semantic_handle"], derived: ["semantic_handle"] },
  { table: "item_state", text: ["kind", "item_id", "status", "supersedes", "superseded_by", "reason", "decided_by", "history", "fact_key", "fact_value"] },
  { table: "forget_policy", text: ["kind", "ttl_since", "protected_ids", "updated_by"] },
  { table: "forget_run", text: ["id", "actor", "counts", "ids_sha256"] },
  { table: "forget_retired", text: ["kind", "item_id", "run_id", "rule", "why", "title"] },
  { table: "write_policy", text: ["policy", "updated_by"] },
  { table: "proposals", text: ["kind", "item_id", "proposed_by", "token_label", "why", "flags"] },
  { table: "item_contradictions", text: ["kind", "item_id", "other_id", "fact_key", "reason"] },
];


/**
 * What a new row of `table` counts, in process: sizeOf's sum over its values (column name → value as stored), so a
 * write can be refused before its row (and on PostgreSQL its index entries) is written.
 */
export function rowBytes({ engine, table, values }: { engine: Engine; table: string; values: Record<string, unknown> }): number {
  const c = COUNTED.find((x) => x.table === table);
  if (!c) throw new Error(`${table} is not a counted table`);
  const bytes = (col: string) => {
    const v = values[col];
    return v === null || v === undefined ? 0 : Buffer.byteLength(typeof v === "string" ? v : JSON.stringify(v), "utf8");
  };
  const cost = DERIVED_COST[engine];
  let n = ROW_OVERHEAD_BYTES + c.text.reduce((sum, col) => sum + bytes(col), 0) + (c.number ? Number(values[c.number] ?? 0) : 0);
  if (c.derived) n += cost.row + derivedVectorBytes(engine) + c.derived.reduce((sum, col) => sum + (cost.text + (c.text.includes(col) ? 0 : 1)) * bytes(col), 0);
  return n;
}

/** The bytes a row of `c` counts, over the row named `row` (new, old, or the table itself in a recount). Both engines read it as written. */
function sizeOf(engine: Engine, c: Counted, row: string): string {
  const bytes = (col: string) => `coalesce(octet_length(cast(${row}."${col}" as text)), 0)`;
  const parts = [String(ROW_OVERHEAD_BYTES), ...c.text.map(bytes)];
  if (c.number) parts.push(`coalesce(${row}."${c.number}", 0)`);
  const cost = DERIVED_COST[engine];
  if (c.derived) parts.push(String(cost.row + derivedVectorBytes(engine)), ...c.derived.map((col) => `${cost.text + (c.text.includes(col) ? 0 : 1)} * ${bytes(col)}`));
  return `(${parts.join(" + ")})`;
}

/** The bytes of every counted row of a store, recounted from its tables; `q` qualifies a table name. */
function recountedBytes(engine: Engine, q: (table: string) => string): string {
  const rows = COUNTED.map((c) => `(select coalesce(sum(${sizeOf(engine, c, quoteIdent(c.table))}), 0) from ${q(c.table)} ${quoteIdent(c.table)})`);
  const postings = Object.entries(DERIVED_COST[engine].postings).map(([table, each]) => `(select count(*) * ${each} from ${q(table)})`);
  return [...rows, ...postings].join(" + ");
}

const isDocuments = (c: Counted) => (c.table === "documents" ? 1 : 0);

/** The statement that sets the total from the rows (install, reindex); `q` qualifies a table name. */
function recountSql(engine: Engine, q: (table: string) => string): string {
  const bytes = recountedBytes(engine, q);
  return `update ${q("store_usage")} set bytes = ${bytes}, documents = (select count(*) from ${q("documents")}) where id = 1`;
}

/** What the stored total and a recount from the rows say. */
export type StoreUsageCheck = { bytes: number; documents: number; recounted_bytes: number; recounted_documents: number };

/** Whether the running total equals a recount from the rows. */
export const usageAgrees = (u: StoreUsageCheck) => u.bytes === u.recounted_bytes && u.documents === u.recounted_documents;

function checkSql(engine: Engine, q: (table: string) => string): string {
  const bytes = recountedBytes(engine, q);
  return `select u.bytes, u.documents, ${bytes} as recounted_bytes, (select count(*) from ${q("documents")}) as recounted_documents from ${q("store_usage")} u where u.id = 1`;
}

function toCheck(row: Record<string, unknown> | undefined): StoreUsageCheck {
  return { bytes: Number(row?.bytes ?? 0), documents: Number(row?.documents ?? 0), recounted_bytes: Number(row?.recounted_bytes ?? 0), recounted_documents: Number(row?.recounted_documents ?? 0) };
}

// --- SQLite --------------------------------------------------------------

const SQLITE_LIMIT_FN = "dualmind_max_store_bytes";
const sqliteRefusal = `select raise(abort, '${STORE_BYTES_REFUSAL}:' || (select bytes from store_usage where id = 1) || ':' || ${SQLITE_LIMIT_FN}()) where (select bytes from store_usage where id = 1) > ${SQLITE_LIMIT_FN}()`;

function sqliteTriggers(): string[] {
  return COUNTED.flatMap((c) => {
    const t = quoteIdent(c.table);
    const name = (op: string) => quoteIdent(`store_usage_${c.table}_${op}`);
    const grow = sizeOf("sqlite", c, "new");
    const shrink = sizeOf("sqlite", c, "old");
    return [
      `CREATE TRIGGER ${name("ins")} after insert on ${t} begin update store_usage set bytes = bytes + ${grow}, documents = documents + ${isDocuments(c)} where id = 1; ${sqliteRefusal}; end`,
      `CREATE TRIGGER ${name("del")} after delete on ${t} begin update store_usage set bytes = bytes - ${shrink}, documents = documents - ${isDocuments(c)} where id = 1; end`,
      `CREATE TRIGGER ${name("upd")} after update on ${t} when ${grow} <> ${shrink} begin update store_usage set bytes = bytes + ${grow} - ${shrink} where id = 1; ${sqliteRefusal} and ${grow} > ${shrink}; end`,
    ];
  });
}

/** The triggers as this process counts (they hold the configured dimension's vector bytes). */
const sqliteTriggersNow = () => sqliteTriggers().sort();

/** Connections whose writes mirror files on disk (a reindex): the limit is not applied while they run. */
const mirroring = new WeakSet<Database.Database>();

/**
 * Give a store connection the limit function its triggers ask, then install
 * or renew the triggers when their definition changed (recounting the total).
 * Called on every open of a writable store connection, after its migrations.
 */
export function installStoreUsage(sqlite: Database.Database): void {
  sqlite.function(SQLITE_LIMIT_FN, { deterministic: false }, () => (mirroring.has(sqlite) ? null : getConfig().limits.maxStoreBytes));
  // The triggers as the file holds them, not a version it claims: an imported index.db cannot leave them out.
  const installed = () => sqlite.prepare("select name, sql from sqlite_master where type = 'trigger' and name like 'store\\_usage\\_%' escape '\\'").all() as { name: string; sql: string }[];
  const triggers = sqliteTriggersNow();
  if (installed().map((t) => t.sql).sort().join("\n") === triggers.join("\n")) return;
  sqlite
    .transaction(() => {
      for (const { name } of installed()) sqlite.exec(`drop trigger ${quoteIdent(name)}`);
      for (const ddl of triggers) sqlite.exec(ddl);
      sqlite.exec(recountSql("sqlite", quoteIdent));
    })
    .immediate();
}

/** Run `fn` (synchronous) with the limit lifted on this connection: writes that mirror the files on disk are never refused. */
export function mirroringDisk<T>({ sqlite, fn }: { sqlite: Database.Database; fn: () => T }): T {
  mirroring.add(sqlite);
  try {
    return fn();
  } finally {
    mirroring.delete(sqlite);
  }
}

/** Set the total from the rows (inside the caller's write, e.g. a reindex). */
export function recountStoreUsage(sqlite: Database.Database): void {
  sqlite.exec(recountSql("sqlite", quoteIdent));
}

export function checkStoreUsage(sqlite: Database.Database): StoreUsageCheck {
  return toCheck(sqlite.prepare(checkSql("sqlite", quoteIdent)).get() as Record<string, unknown> | undefined);
}

/** The stored total; a query both engines run as written, inside the caller's transaction. */
export const STORE_USAGE_SQL = "select documents, bytes from store_usage where id = 1";

// --- PostgreSQL ----------------------------------------------------------

/** The end of every PostgreSQL counting function: add `delta` and `docs` to the total, and refuse growth past the limit. */
function pgApply(q: (table: string) => string): string {
  return `if delta = 0 and docs = 0 then return null; end if;
  update ${q("store_usage")} set bytes = bytes + delta, documents = documents + docs where id = 1 returning bytes into total;
  if delta > 0 then
    most := nullif(current_setting('dualmind.max_store_bytes', true), '')::bigint;
    if most is not null and total > most then
      raise exception '${STORE_BYTES_REFUSAL}:%:%', total, most using errcode = '${STORE_BYTES_SQLSTATE}';
    end if;
  end if;
  return null;`;
}

/**
 * A store schema's counting triggers: one statement trigger per insert, update and delete of each table, reading the
 * statement's rows from its transition tables. Row triggers would update the one usage row once per written row, and
 * PostgreSQL keeps every version of a row its own transaction updated, each update walking past the ones before: a
 * statement that wrote n rows cost n² steps (twenty thousand thoughts in one insert: seconds of the server's time).
 */
function pgStatements(schema: string): string[] {
  const q = (table: string) => `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const declare = "declare delta bigint := 0; docs integer := 0; total bigint; most bigint;";
  const trigger = ({ table, op, body }: { table: string; op: "insert" | "update" | "delete"; body: string }) => {
    const fn = q(`store_usage_${table}_${op}`);
    const tables = { insert: "new table as new_rows", update: "old table as old_rows new table as new_rows", delete: "old table as old_rows" }[op];
    return [
      `create or replace function ${fn}() returns trigger language plpgsql as $f$
${declare}
begin
  ${body}
  ${pgApply(q)}
end $f$`,
      `drop trigger if exists store_usage_${op} on ${q(table)}`,
      `create trigger store_usage_${op} after ${op} on ${q(table)} referencing ${tables} for each statement execute function ${fn}()`,
    ];
  };
  const counted = COUNTED.flatMap((c) => {
    const sum = (rows: string) => `(select coalesce(sum(${sizeOf("pg", c, "r")}), 0) from ${rows} r)`;
    const count = (rows: string) => (isDocuments(c) ? `(select count(*) from ${rows})` : "0");
    return [
      // The row triggers of earlier versions.
      `drop trigger if exists store_usage on ${q(c.table)}`,
      `drop function if exists ${q(`store_usage_${c.table}`)}()`,
      ...trigger({ table: c.table, op: "insert", body: `delta := ${sum("new_rows")}; docs := ${count("new_rows")};` }),
      ...trigger({ table: c.table, op: "update", body: `delta := ${sum("new_rows")} - ${sum("old_rows")};` }),
      ...trigger({ table: c.table, op: "delete", body: `delta := -${sum("old_rows")}; docs := -${count("old_rows")};` }),
    ];
  });
  // Posting tables: their rows count per row, since their number follows the words, not the bytes.
  const postings = Object.entries(DERIVED_COST.pg.postings).flatMap(([table, each]) => [
    ...trigger({ table, op: "insert", body: `select count(*) * ${each} into delta from new_rows;` }),
    ...trigger({ table, op: "delete", body: `select -count(*) * ${each} into delta from old_rows;` }),
  ]);
  return [...counted, ...postings];
}

/** The version of the triggers as this process counts (they hold the configured dimension's vector bytes). */
const pgVersions = new Map<number | undefined, string>();
function pgVersion(): string {
  const dimension = getConfig().embed.dimension;
  let version = pgVersions.get(dimension);
  if (version === undefined) {
    version = sha256Hex([...pgStatements("s"), recountSql("pg", (t) => `s.${quoteIdent(t)}`)].join(";\n")).slice(0, 16);
    pgVersions.set(dimension, version);
  }
  return version;
}

/** Whether a store schema's triggers are this version's (its store_meta `store_usage_version`). */
export function pgStoreUsageCurrent(version: string | undefined): boolean {
  return version === pgVersion();
}

/** PostgreSQL: install or renew a store schema's triggers and recount (inside the caller's migration transaction). */
export async function installStoreUsagePg({ tx, schema }: { tx: SqlRunner; schema: string }): Promise<void> {
  const [row] = (await tx.execute(sql`select value from ${sql.identifier(schema)}.store_meta where key = 'store_usage_version'`)).rows as { value: string }[];
  const version = pgVersion();
  if (row?.value === version) return;
  for (const statement of pgStatements(schema)) await tx.execute(sql.raw(statement));
  await recountStoreUsagePg({ tx, schema });
  await tx.execute(sql`insert into ${sql.identifier(schema)}.store_meta (key, value) values ('store_usage_version', ${version}) on conflict (key) do update set value = excluded.value`);
}

/**
 * PostgreSQL: set the total from the rows, inside the caller's transaction (install, reindex). A writer holds the
 * usage row from its first counted row until it commits, and the recount reads the rows as committed when its
 * statement starts: so the row is locked first, in a statement of its own. A writer in flight has then committed
 * (the recount sees its rows) or not yet reached the usage row (its trigger waits, then adds to the recounted
 * total); recounting without the lock would overwrite the total with a count that missed the writer's rows.
 */
export async function recountStoreUsagePg({ tx, schema }: { tx: SqlRunner; schema: string }): Promise<void> {
  const q = (t: string) => `${quoteIdent(schema)}.${quoteIdent(t)}`;
  await tx.execute(sql.raw(`select 1 from ${q("store_usage")} where id = 1 for update`));
  await tx.execute(sql.raw(recountSql("pg", q)));
}

export async function checkStoreUsagePg({ tx, schema }: { tx: SqlRunner; schema: string }): Promise<StoreUsageCheck> {
  return toCheck((await tx.execute(sql.raw(checkSql("pg", (t) => `${quoteIdent(schema)}.${quoteIdent(t)}`)))).rows[0] as Record<string, unknown> | undefined);
}

// --- The embedding cache -------------------------------------------------

/**
 * The embedding cache (vectors by model and text, kept after their rows are
 * gone) holds no more vectors than the store does: each derived row counts one
 * cached copy (derivedVectorBytes), so rewriting documents again and again
 * cannot grow the cache past what the limit counted. The embed worker trims
 * it, oldest first, in the write that adds to it.
 */
export const EMBEDDING_CACHE_EXCESS_SQL: Record<Engine, string> = {
  sqlite: "select (select count(*) from embedding_cache) - (select count(*) from embeddings) as excess",
  pg: "select (select count(*) from embedding_cache) - (select count(*) from chunk_embeddings) - (select count(*) from embeddings) as excess",
};

/** Cached vectors one write lets go of at most: a cache far past the bound (an upgrade) shrinks over a few batches. */
const CACHE_TRIM_MAX = 2_000;

/** The statement that drops the `excess` oldest cached vectors (a checked integer), at most CACHE_TRIM_MAX of them. */
export const embeddingCacheTrimSql = (excess: number) => `delete from embedding_cache where key in (select key from embedding_cache order by created_at, key limit ${Math.min(CACHE_TRIM_MAX, Math.max(0, Math.trunc(excess)))})`;
