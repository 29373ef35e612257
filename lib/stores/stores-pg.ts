import { sql } from "drizzle-orm";
import { z } from "zod";
import { isVanishedStore, migrateStoreSchema, storeNamesInPg, storeSchemaName, storeSchemaVersion, useStoreSchema, withStoreTx, type PgStoreHandle } from "../db/pg-store";
import type { PgGovernanceExecutor, PgHandle } from "../db/pg";
import { CORE_STORE, DEFAULT_STORE, storeNameSchema } from "../db/store-names";
import { AppError, dbErrorCode, isAppError } from "../errors";
import { appendAuditPg, hasAuditEntry, pgLedger } from "../governance/audit";
import { EXACT_SCAN_LIMIT, pgvectorSupportPg } from "../index/vectors-pg";
import { reindexMarkedMemoriesPg } from "../index/memories-pg";
import { forgetStoreEvaluationsPg, lastLifecycleActionPg, removeStoreFromAllowListsPg } from "../db/store-lifecycle";
import { assertDeleteConfirmed, assertStoreQuota, assertStoreRemovable, createStoreSchema, STORES_CREATED_BY_SQL } from "./stores";

/**
 * Stores on PostgreSQL (the SQLite twin is ./stores.ts): create, open, list,
 * describe. The layout (a schema per store, the store transaction, the
 * read-only core path, the store migrator) is lib/db/pg-store.ts.
 */

async function schemaExists(db: PgGovernanceExecutor, schema: string): Promise<boolean> {
  const r = await db.execute(sql`select 1 from pg_namespace where nspname = ${schema}`);
  return r.rows.length > 0;
}

const handleFor = (pg: PgHandle, store: string, readOnly = false): PgStoreHandle => ({ kind: "pg", store, schema: storeSchemaName(store), db: pg.db, readOnly });

/** Per pool, the stores seen (by name) at the current version in their own schema, so an open checks once per pool, not per request. */
const upToDate = new WeakMap<PgHandle["pool"], Set<string>>();

function markUpToDate(pg: PgHandle, store: string): void {
  const seen = upToDate.get(pg.pool) ?? new Set<string>();
  seen.add(store);
  upToDate.set(pg.pool, seen);
}

/**
 * The one way to get a PostgreSQL store handle: an unknown store is a 404
 * (never created on the fly); a store behind the current schema version is
 * migrated first.
 */
export async function openStorePg({ pg, store }: { pg: PgHandle; store: string }): Promise<PgStoreHandle> {
  const parsed = storeNameSchema.safeParse(store);
  if (!parsed.success) throw new AppError("not_found", `store ${store} does not exist`);
  const handle = handleFor(pg, store);
  if (upToDate.get(pg.pool)?.has(store)) return handle;
  if (!(await schemaExists(pg.db, handle.schema))) throw new AppError("not_found", `store ${store} does not exist`);
  await withStoreTx({ handle, work: async (tx) => {
    const meta = new Map(((await tx.execute(sql`select key, value from store_meta where key in ('name', 'schema_version')`)).rows as { key: string; value: string }[]).map((r) => [r.key, r.value]));
    // A long name's schema is shortened with a hash, so another (valid) name can spell the same schema: the schema
    // answers only to the store that made it, or a token allowed one name would reach the other store's rows.
    if (meta.get("name") !== store) throw new AppError("not_found", `store ${store} does not exist`);
    if (meta.get("schema_version") !== storeSchemaVersion()) {
      await migrateStoreSchema({ tx, schema: handle.schema });
      await reindexMarkedMemoriesPg({ tx });
    }
  } });
  markUpToDate(pg, store);
  return handle;
}

/** Core's handle for a read that includes core, read-only (see PgStoreHandle), or null when not asked or the store is core. */
export async function openCoreForPg({ pg, handle, includeCore }: { pg: PgHandle; handle: PgStoreHandle; includeCore: boolean }): Promise<PgStoreHandle | null> {
  if (!includeCore || handle.store === CORE_STORE) return null;
  const core = await openStorePg({ pg, store: CORE_STORE });
  return { ...core, readOnly: true };
}

export type PgStoreSummary = {
  name: string;
  schema: string;
  description: string | null;
  archived: boolean;
  createdAt: number | null;
  schemaVersion: string | null;
  vectors: { method: "hnsw" | "exact_scan"; exactScanLimit: number; pgvector: string | null; hnswDimensions: number[]; reason: string };
  counts: Record<string, number>;
};

/** The tables a store's summary counts (fixed names from the store schema). */
const COUNTED_TABLES = ["categories", "chains", "chunk_embeddings", "chunks", "documents", "embeddings", "kg_frame", "kg_node", "kg_relation", "learnings", "memories", "reasoning_traces", "thoughts", "working_memory"] as const;

export async function describeStorePg({ handle }: { handle: PgStoreHandle }): Promise<PgStoreSummary> {
  const archived = (await lastLifecycleActionPg({ db: handle.db, store: handle.store })) === "store.archive";
  return withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const meta = Object.fromEntries(((await tx.execute(sql`select key, value from store_meta`)).rows as { key: string; value: string }[]).map((r) => [r.key, r.value]));
    const counts: Record<string, number> = {};
    for (const t of COUNTED_TABLES) counts[t] = Number(((await tx.execute(sql`select count(*) as n from ${sql.identifier(t)}`)).rows[0] as { n: string }).n);
    const { pgvector, hnswDimensions } = await pgvectorSupportPg({ db: tx });
    return {
      name: handle.store,
      schema: handle.schema,
      description: meta.description ?? null,
      archived,
      createdAt: meta.created_at ? Number(meta.created_at) : null,
      schemaVersion: meta.schema_version ?? null,
      vectors: {
        method: hnswDimensions.length > 0 ? "hnsw" : "exact_scan",
        exactScanLimit: EXACT_SCAN_LIMIT,
        pgvector,
        hnswDimensions,
        reason: pgvector
          ? `pgvector ${pgvector}: vector search walks an HNSW index (cosine) per dimension${hnswDimensions.length ? ` (here: ${hnswDimensions.join(", ")})` : " — built by the first vector write of a dimension"}, with no size limit; vectors without one use the exact scan of up to ${EXACT_SCAN_LIMIT}`
          : `vector search is an exact cosine scan over real[] of up to ${EXACT_SCAN_LIMIT} vectors (after filters); larger sets answer lexically with reason vectors_unavailable; pgvector is not created in this database (an admin runs CREATE EXTENSION vector)`,
      },
      counts,
    };
  } });
}

/** Every store in the database, core first, then by name (see storeNamesInPg). */
export async function listStoreNamesPg({ pg }: { pg: PgHandle }): Promise<string[]> {
  return storeNamesInPg(pg.db);
}

/** Whether a store holds anything a page would show: one exists() probe per table, no counts (the twin of storeHasContent). */
export async function storeHasContentPg({ handle }: { handle: PgStoreHandle }): Promise<boolean> {
  return withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const probe = sql.join(
      ["documents", "memories", "reasoning_traces", "learnings", "thoughts"].map((t) => sql`exists (select 1 from ${sql.identifier(t)})`),
      sql` or `,
    );
    const [row] = (await tx.execute(sql`select (${probe}) as has`)).rows as { has: boolean }[];
    return row.has === true;
  } });
}

export async function listStoresPg({ pg }: { pg: PgHandle }): Promise<PgStoreSummary[]> {
  const out: PgStoreSummary[] = [];
  for (const store of await listStoreNamesPg({ pg })) {
    try {
      out.push(await describeStorePg({ handle: await openStorePg({ pg, store }) }));
    } catch (e) {
      // Deleted (on any replica) since the names were read: not listed.
      if (!(isAppError(e) && e.code === "not_found") && !isVanishedStore(e)) throw e;
    }
  }
  return out;
}

/**
 * Create a store: its schema, its tables (the store migrations), its meta
 * and the audit row, in one transaction — all or nothing. Creating one that
 * exists (or that another replica is creating right now) is a conflict.
 */
export async function createStorePg({ pg, input, actor, now = Date.now() }: { pg: PgHandle; input: z.input<typeof createStoreSchema>; actor: string; now?: number }): Promise<PgStoreSummary> {
  const { name, description } = createStoreSchema.parse(input);
  const handle = handleFor(pg, name);
  const createdByActor = ((await pg.pool.query(STORES_CREATED_BY_SQL.replace("?", "$1"), [actor])).rows as { store: string }[]).map((r) => r.store);
  const existing = await listStoreNamesPg({ pg });
  if (existing.includes(name)) throw new AppError("conflict", `store ${name} already exists`);
  assertStoreQuota({ existing, createdByActor, actor });
  try {
    await pg.db.transaction(async (tx) => {
      await tx.execute(sql`create schema ${sql.identifier(handle.schema)}`);
      await useStoreSchema({ tx, schema: handle.schema });
      await migrateStoreSchema({ tx, schema: handle.schema });
      const facts: [string, string][] = [["name", name], ["created_at", String(now)], ...(description ? [["description", description] as [string, string]] : [])];
      for (const [key, value] of facts) await tx.execute(sql`insert into store_meta (key, value) values (${key}, ${value})`);
      await appendAuditPg({ db: tx, entry: { actor, action: "store.create", target: `store:${name}`, details: description ? { description } : null } });
    });
  } catch (e) {
    // 42P06: the schema exists; 23505: another replica's create of it committed while this one waited.
    if (dbErrorCode(e) === "42P06" || dbErrorCode(e) === "23505") throw new AppError("conflict", `store ${name} already exists`);
    throw e;
  }
  markUpToDate(pg, name);
  return describeStorePg({ handle });
}

/** deleteStore on PostgreSQL: the store's schema dropped with everything in it, and an audit row, in one transaction. */
export async function deleteStorePg({ pg, name, actor, confirm }: { pg: PgHandle; name: string; actor: string; confirm: string | undefined }): Promise<{ deleted: string }> {
  if (!(await listStoreNamesPg({ pg })).includes(name)) throw new AppError("not_found", `store ${name} does not exist`);
  assertStoreRemovable({ name });
  assertDeleteConfirmed({ name, confirm });
  // A search reading the store at that moment can make the drop a deadlock's victim: the drop is tried again (a few times, then 503).
  for (let attempt = 1; ; attempt++) {
    try {
      await pg.db.transaction(async (tx) => {
        await tx.execute(sql`drop schema ${sql.identifier(storeSchemaName(name))} cascade`);
        const allowLists = await removeStoreFromAllowListsPg({ tx, store: name });
        await forgetStoreEvaluationsPg({ tx, store: name });
        await appendAuditPg({ db: tx, entry: { actor, action: "store.delete", target: `store:${name}`, details: allowLists > 0 ? { allow_lists_changed: allowLists } : null } });
      });
      break;
    } catch (e) {
      if (dbErrorCode(e) !== "40P01" || attempt >= 3) throw e;
    }
  }
  upToDate.get(pg.pool)?.delete(name);
  return { deleted: name };
}

/** archiveStore on PostgreSQL: the audit row is the archive (lib/db/store-lifecycle.ts); there is no connection of its own to close. */
export async function archiveStorePg({ pg, name, actor }: { pg: PgHandle; name: string; actor: string }): Promise<{ store: string; archived: boolean }> {
  return setArchivedPg({ pg, name, actor, archive: true });
}

export async function unarchiveStorePg({ pg, name, actor }: { pg: PgHandle; name: string; actor: string }): Promise<{ store: string; archived: boolean }> {
  return setArchivedPg({ pg, name, actor, archive: false });
}

async function setArchivedPg({ pg, name, actor, archive }: { pg: PgHandle; name: string; actor: string; archive: boolean }): Promise<{ store: string; archived: boolean }> {
  if (!(await listStoreNamesPg({ pg })).includes(name)) throw new AppError("not_found", `store ${name} does not exist`);
  if (archive) assertStoreRemovable({ name, what: "archived" });
  await pg.db.transaction(async (tx) => {
    // One lifecycle change of a store at a time across replicas: the second of two archives sees the first's row.
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`dualmind:store-lifecycle:${name}`}, 0))`);
    const isArchived = (await lastLifecycleActionPg({ db: tx, store: name })) === "store.archive";
    if (archive && isArchived) throw new AppError("conflict", `store ${name} is already archived`);
    if (!archive && !isArchived) throw new AppError("conflict", `store ${name} is not archived`);
    await appendAuditPg({ db: tx, entry: { actor, action: archive ? "store.archive" : "store.unarchive", target: `store:${name}`, details: null } });
  });
  return { store: name, archived: archive };
}

/** The core store exists from the first start (created quietly when missing). */
export async function ensureCoreStorePg({ pg }: { pg: PgHandle }): Promise<void> {
  if (await schemaExists(pg.db, storeSchemaName(CORE_STORE))) return;
  await createQuietly({ pg, name: CORE_STORE, description: "Shared identity and preferences, readable beside any store.", actor: "system:bootstrap" });
}

/** A fresh database gets a ready `default` store once (as ensureDefaultStore on SQLite: a removed one stays removed). */
export async function ensureDefaultStorePg({ pg }: { pg: PgHandle }): Promise<boolean> {
  if (await schemaExists(pg.db, storeSchemaName(DEFAULT_STORE))) return false;
  if (await hasAuditEntry({ handle: pgLedger(pg.db), action: "store.create", target: `store:${DEFAULT_STORE}` })) return false;
  return createQuietly({ pg, name: DEFAULT_STORE, description: "The store agents write to unless told otherwise.", actor: "system:bootstrap" });
}

async function createQuietly({ pg, name, description, actor }: { pg: PgHandle; name: string; description: string; actor: string }): Promise<boolean> {
  try {
    await createStorePg({ pg, input: { name, description }, actor });
    return true;
  } catch (e) {
    // Another replica starting on the same database made it first.
    if (isAppError(e) && e.code === "conflict") return false;
    throw e;
  }
}

