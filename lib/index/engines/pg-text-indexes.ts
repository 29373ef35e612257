import { sql } from "drizzle-orm";
import { quoteIdent, type PgStoreHandle } from "../../db/pg-store";
import { log } from "../../log";

/**
 * PostgreSQL's GIN full-text indexes keep a key for every word they ever
 * indexed: vacuum empties a deleted row's postings but never drops the key,
 * so text written and deleted with ever-new words grows them without end,
 * outside what the store's byte total counts. After a worker batch on a
 * store, at most every five minutes per store and process, an index grown past
 * four times its table (and REBUILD_MIN_BYTES) is rebuilt with REINDEX
 * CONCURRENTLY: reads and writes of the store go on meanwhile.
 */
export const TEXT_INDEXES = ["chunks_tsv_gin", "thoughts_tsv_gin", "kg_node_tsv_gin", "reasoning_traces_tsv_gin", "learnings_tsv_gin"];
const REBUILD_MIN_BYTES = 8 * 1024 * 1024;
const REBUILD_RATIO = 4;
const CHECK_EVERY_MS = 5 * 60_000;

const g = globalThis as unknown as { __dualmindTextIndexChecks?: Map<string, number> };
const checked = (g.__dualmindTextIndexChecks ??= new Map());

/** The text indexes of the store past their bound, rebuilt; their names. Errors are logged, not thrown (the batch stands). */
export async function rebuildBloatedTextIndexesPg({ handle, now = Date.now(), minBytes = REBUILD_MIN_BYTES }: { handle: PgStoreHandle; now?: number; minBytes?: number }): Promise<string[]> {
  if (handle.readOnly || now - (checked.get(handle.schema) ?? 0) < CHECK_EVERY_MS) return [];
  checked.set(handle.schema, now);
  const rebuilt: string[] = [];
  try {
    const found = await handle.db.execute(
      sql`select c.relname as index, pg_relation_size(c.oid)::bigint as bytes, (pg_total_relation_size(i.indrelid) - pg_indexes_size(i.indrelid))::bigint as table_bytes
        from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = ${handle.schema} and c.relname = any(${`{${TEXT_INDEXES.join(",")}}`}::text[])`,
    );
    for (const r of found.rows as { index: string; bytes: unknown; table_bytes: unknown }[]) {
      if (Number(r.bytes) <= Math.max(minBytes, REBUILD_RATIO * Number(r.table_bytes))) continue;
      await handle.db.execute(sql.raw(`reindex index concurrently ${quoteIdent(handle.schema)}.${quoteIdent(r.index)}`));
      rebuilt.push(r.index);
      log("info", "rebuilt a full-text index grown past its bound (words no row holds any more)", { store: handle.store, index: r.index, bytes: Number(r.bytes), tableBytes: Number(r.table_bytes) });
    }
  } catch (e) {
    log("warn", "could not rebuild a grown full-text index; tried again after a later batch", { store: handle.store, error: (e as Error).message });
  }
  return rebuilt;
}
