import { randomUUID } from "node:crypto";
import { and, asc, eq, lt, sql } from "drizzle-orm";
import { z } from "zod";
import { checkStoreUsagePg, pgStoreUsageCurrent, recountStoreUsagePg, usageAgrees } from "../../db/store-usage";
import { migrateStoreSchema, rowsOf, storeNamesInPg, storeSchemaName, storeSchemaVersion, useStoreSchema, withStoreTx, type PgStoreHandle } from "../../db/pg-store";
import { getPg, type PgGovernanceExecutor, type PgHandle } from "../../db/pg";
import { CORE_STORE, DEFAULT_STORE, storeNameSchema } from "../../db/store-names";
import { AppError, dbErrorCode, isAppError } from "../../errors";
import { appendAuditPg, hasAuditEntry, pgLedger } from "../../governance/audit";
import { EXACT_SCAN_LIMIT, pgvectorSupportPg } from "../../index/vectors-pg";
import { createMemoryPg, deleteMemoryPg, getMemoryByPathPg, getTrashedMemoryPg, listMemoryTrashPg, purgeTrashedMemoryPg, reindexMarkedMemoriesPg, restoreMemoryPg, setCategoryDescriptionPg, updateMemoryPg } from "../../index/memories-pg";
import { activeStoreNamesPg, forgetDeletedStoreOp, lastLifecycleActionPg, storeNotArchivedSql } from "../../db/store-lifecycle";
import { assertDeleteConfirmed, assertStoreQuota, assertStoreRemovable, createStoreSchema, STORES_CREATED_BY_SQL } from "../stores";
import type { WorkerMode } from "../../embed/worker-state";
import { startEmbedWorkerPg } from "../../index/embed-queue-pg";
import { getJobById, type Job, JOB_STALE_MS, jobFromRow, listLatestJobs, startSweeping, takeOverOp, tooManyAttempts, waitForJob } from "../../index/jobs";
import { log } from "../../log";
import { inCallerTx, writeLedger } from "../../db/port";
import { deleteDocumentOp } from "../../index/ingest";
import { searchStorePg } from "../../index/search-pg";
import { planQueryVectorPg } from "../../index/query-vector-pg";
import type { StoreEngine, StoreInfo } from "../backend";
import { type AdminJobRow, adminJobs } from "../../db/schema/pg/governance";
import { notFound, sha256Hex } from "../../common";
import { memories } from "../../db/schema/pg/store";
import { CHUNKING_VERSION } from "../../index/chunking";
import { indexMemoryOp } from "../../index/memories";
import type { ReindexKindCounts, ReindexResult } from "../../index/reindex";
import type { VerifyReport } from "../../index/verify";

/**
 * The stores on PostgreSQL, beside their SQLite twin (../stores.ts, ./sqlite.ts): a schema per store (the layout,
 * the store transaction, the read-only core path and the store migrator are lib/db/pg-store.ts), the memories
 * table as the truth, and the reindex job's claims across replicas.
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
  if (!parsed.success) throw notFound({ what: "store", id: store });
  const handle = handleFor(pg, store);
  if (upToDate.get(pg.pool)?.has(store)) return handle;
  if (!(await schemaExists(pg.db, handle.schema))) throw notFound({ what: "store", id: store });
  await withStoreTx({ handle, work: async (tx) => {
    const meta = new Map(((await tx.execute(sql`select key, value from store_meta where key in ('name', 'schema_version', 'store_usage_version')`)).rows as { key: string; value: string }[]).map((r) => [r.key, r.value]));
    // A long name's schema is shortened with a hash, so another (valid) name can spell the same schema: the schema
    // answers only to the store that made it, or a token allowed one name would reach the other store's rows.
    if (meta.get("name") !== store) throw notFound({ what: "store", id: store });
    if (meta.get("schema_version") !== storeSchemaVersion() || !pgStoreUsageCurrent(meta.get("store_usage_version"))) {
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

/** The tables a store's summary counts (fixed names from the store schema). */
const COUNTED_TABLES = ["categories", "chains", "chunk_embeddings", "chunks", "documents", "embeddings", "kg_frame", "kg_node", "kg_relation", "learnings", "memories", "reasoning_traces", "thoughts", "working_memory"] as const;

/** A store as the API describes it: no files on PostgreSQL; the exact scan works on any PostgreSQL, and `vectors.reason` says which method answers and its limit. */
export async function describeStorePg({ handle }: { handle: PgStoreHandle }): Promise<StoreInfo> {
  const archived = (await lastLifecycleActionPg({ db: handle.db, store: handle.store })) === "store.archive";
  return withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const meta = Object.fromEntries(((await tx.execute(sql`select key, value from store_meta`)).rows as { key: string; value: string }[]).map((r) => [r.key, r.value]));
    const counts: Record<string, number> = {};
    for (const t of COUNTED_TABLES) counts[t] = Number(((await tx.execute(sql`select count(*) as n from ${sql.identifier(t)}`)).rows[0] as { n: string }).n);
    const { pgvector, hnswDimensions } = await pgvectorSupportPg({ db: tx });
    return {
      name: handle.store,
      description: meta.description ?? null,
      archived,
      created_at: meta.created_at ? Number(meta.created_at) : null,
      schema_version: meta.schema_version ?? null,
      vectors: {
        available: true,
        version: pgvector,
        reason: pgvector
          ? `pgvector ${pgvector}: vector search walks an HNSW index (cosine) per dimension${hnswDimensions.length ? ` (here: ${hnswDimensions.join(", ")})` : " — built by the first vector write of a dimension"}, with no size limit; vectors without one use the exact scan of up to ${EXACT_SCAN_LIMIT}`
          : `vector search is an exact cosine scan over real[] of up to ${EXACT_SCAN_LIMIT} vectors (after filters); larger sets answer lexically with reason vectors_unavailable; pgvector is not created in this database (an admin runs CREATE EXTENSION vector)`,
      },
      counts,
      files: null,
    };
  } });
}

/** Every store in the database, core first, then by name (see storeNamesInPg). */
export async function listStoreNamesPg({ pg }: { pg: PgHandle }): Promise<string[]> {
  return storeNamesInPg(pg.db);
}

/**
 * Create a store: its schema, its tables (the store migrations), its meta
 * and the audit row, in one transaction — all or nothing. Creating one that
 * exists (or that another replica is creating right now) is a conflict.
 */
export async function createStorePg({ pg, input, actor, now = Date.now() }: { pg: PgHandle; input: z.input<typeof createStoreSchema>; actor: string; now?: number }): Promise<StoreInfo> {
  const { name, description } = createStoreSchema.parse(input);
  const handle = handleFor(pg, name);
  try {
    await pg.db.transaction(async (tx) => {
      // The quotas are counted and the store made under one lock, so creates at the same moment (any replica) are
      // counted one after another and cannot all pass a count taken before any of them committed.
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('dualmind:store-create', 0))`);
      const [beforeActor, afterActor] = STORES_CREATED_BY_SQL.split("?");
      const createdByActor = ((await tx.execute(sql`${sql.raw(beforeActor)}${actor}${sql.raw(afterActor)}`)).rows as { store: string }[]).map((r) => r.store);
      const existing = await storeNamesInPg(tx);
      if (existing.includes(name)) throw new AppError("conflict", `store ${name} already exists`);
      assertStoreQuota({ existing, createdByActor, actor });
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
  if (!(await listStoreNamesPg({ pg })).includes(name)) throw notFound({ what: "store", id: name });
  assertStoreRemovable({ name });
  assertDeleteConfirmed({ name, confirm });
  // A search reading the store at that moment can make the drop a deadlock's victim: the drop is tried again (a few times, then 503).
  for (let attempt = 1; ; attempt++) {
    try {
      await pg.db.transaction(async (tx) => {
        await tx.execute(sql`drop schema ${sql.identifier(storeSchemaName(name))} cascade`);
        const allowLists = await writeLedger(pgLedger(tx), forgetDeletedStoreOp(name));
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

/** archiveStore and unarchiveStore on PostgreSQL: the audit row is the archive (lib/db/store-lifecycle.ts); there is no connection of its own to close. */
async function setArchivedPg({ pg, name, actor, archive }: { pg: PgHandle; name: string; actor: string; archive: boolean }): Promise<{ store: string; archived: boolean }> {
  if (!(await listStoreNamesPg({ pg })).includes(name)) throw notFound({ what: "store", id: name });
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

/**
 * The stores on PostgreSQL: a schema per store, the memories table as the
 * truth. Every method awaits the process's pool (migrated on first use) and
 * opens the store there (404 when unknown).
 */
export function pgStoreEngine(pgHandle: Promise<PgHandle>): StoreEngine {
  const open = async (store: string) => {
    const pg = await pgHandle;
    return { pg, handle: await openStorePg({ pg, store }) };
  };
  return {
    kind: "postgres",
    open: async (store) => (await open(store)).handle,
    openCore: async (handle, includeCore) => openCoreForPg({ pg: await pgHandle, handle: handle as PgStoreHandle, includeCore }),
    ensureStartupStores: async () => {
      const pg = await pgHandle;
      await ensureCoreStorePg({ pg });
      return { createdDefault: await ensureDefaultStorePg({ pg }) };
    },
    listStoreNames: async () => listStoreNamesPg({ pg: await pgHandle }),
    createStore: async (a) => createStorePg({ pg: await pgHandle, ...a }),
    deleteStore: async (a) => deleteStorePg({ pg: await pgHandle, ...a }),
    archiveStore: async (a) => setArchivedPg({ pg: await pgHandle, ...a, archive: true }),
    unarchiveStore: async (a) => setArchivedPg({ pg: await pgHandle, ...a, archive: false }),
    describeStore: async ({ store }) => describeStorePg({ handle: (await open(store)).handle }),
    search: async ({ store, input }) => {
      const { pg, handle } = await open(store);
      const core = await openCoreForPg({ pg, handle, includeCore: input.include_core });
      // The query is embedded only when vectors can take part; fts never waits for the provider.
      const vector = input.mode === "fts" ? undefined : await planQueryVectorPg({ handle, text: input.q });
      return searchStorePg({ handle, core, input, vector });
    },
    getMemory: async ({ store, ...a }) => getMemoryByPathPg({ handle: (await open(store)).handle, ...a }),
    createMemory: async ({ store, ...a }) => createMemoryPg({ handle: (await open(store)).handle, ...a }),
    createMemoryIn: ({ handle, ...a }) => createMemoryPg({ handle: handle as PgStoreHandle, ...a }),
    updateMemory: async ({ store, ...a }) => updateMemoryPg({ handle: (await open(store)).handle, ...a }),
    updateMemoryIn: ({ handle, ...a }) => updateMemoryPg({ handle: handle as PgStoreHandle, ...a }),
    deleteMemory: async ({ store, ...a }) => deleteMemoryPg({ handle: (await open(store)).handle, ...a }),
    listMemoryTrash: async ({ store }) => listMemoryTrashPg({ handle: (await open(store)).handle }),
    getTrashedMemory: async ({ store, ...a }) => getTrashedMemoryPg({ handle: (await open(store)).handle, ...a }),
    restoreMemory: async ({ store, ...a }) => restoreMemoryPg({ handle: (await open(store)).handle, ...a }),
    purgeTrashedMemory: async ({ store, ...a }) => purgeTrashedMemoryPg({ handle: (await open(store)).handle, ...a }),
    setCategoryDescription: async ({ store, ...a }) => setCategoryDescriptionPg({ handle: (await open(store)).handle, ...a }),
    verifyStore: async ({ store }) => verifyStorePg({ handle: (await open(store)).handle }),
    listUnindexableFiles: async () => [],
    startReindex: async ({ store, actor }) => {
      const { pg, handle } = await open(store);
      // A reindex of this store whose replica died (heartbeat older than JOB_STALE_MS) is taken over first, by whichever replica is asked next.
      const takeOver = () => takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER, store: handle.store });
      for (let row = await takeOver(); row; row = await takeOver()) void runReindexJobPg({ pg, handle, jobId: row.id });
      // The ask that claims the job runs it; an ask while one runs gets that job, as it is now.
      const claimed = await startReindexJobPg({ db: pg.db, store: handle.store, actor, owner: JOB_OWNER });
      if (claimed.run) void runReindexJobPg({ pg, handle, jobId: claimed.row.id });
      return jobFromRow(claimed.row);
    },
    // The PostgreSQL rebuild reports no progress (one transaction over the memories): its counts come with the finished job.
    runReindex: async ({ store, actor, reason }) => {
      const { pg, handle } = await open(store);
      return runReindexJobToEndPg({ pg, handle, actor, reason });
    },
    getJob: async (a) => getJobById({ ledger: pgLedger((await pgHandle).db), ...a }),
    listLatestJobs: async () => listLatestJobs({ ledger: pgLedger((await pgHandle).db) }),
  };
}

/**
 * The embed worker over every PostgreSQL store (DATABASE_URL set), started
 * beside the SQLite one by the server and `npm run worker`. Each round asks
 * for the process's pool again, so a database that was down at start-up is
 * picked up when it comes back.
 */
export function startStoresEmbedWorkerPg({ signal, idleMs, mode }: { signal?: AbortSignal; idleMs?: number; mode?: WorkerMode } = {}): Promise<void> {
  const pg = async () => {
    const handle = getPg();
    if (!handle) throw new Error("DATABASE_URL is not set");
    return handle;
  };
  return startEmbedWorkerPg({
    signal,
    idleMs,
    // Archived stores are left alone.
    listStores: async () => {
      const handle = await pg();
      return activeStoreNamesPg({ pg: handle, names: await listStoreNamesPg({ pg: handle }) });
    },
    openStore: async (store) => openStorePg({ pg: await pg(), store }),
    registry: async () => (await pg()).db,
    mode,
  });
}

/** startJobSweeper's twin: take over every reindex whose replica went silent, on any store (claims skip locked rows, so sweeping replicas never take one job twice). */
export async function resumeStaleJobsPg(): Promise<string[]> {
  const handle = getPg();
  if (!handle) return [];
  const pg = await handle;
  const resumed: string[] = [];
  for (let row = await takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER }); row; row = await takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER })) {
    log("warn", "resuming a reindex whose replica stopped", { jobId: row.id, store: row.store, attempt: row.attempts });
    try {
      void runReindexJobPg({ pg, handle: await openStorePg({ pg, store: row.store }), jobId: row.id });
      resumed.push(row.id);
    } catch (e) {
      // Its store is gone: the job stays this replica's until its heartbeat is stale again, and is closed after MAX_ATTEMPTS.
      log("error", "cannot resume a reindex", { jobId: row.id, store: row.store, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return resumed;
}

export function startJobSweeperPg(): void {
  startSweeping({ name: "pg", sweep: resumeStaleJobsPg });
}

/**
 * Admin job claims on PostgreSQL, where replicas share admin_jobs and no pids:
 * one running job per (kind, store) by a partial unique index, a stale job
 * claimed with FOR UPDATE SKIP LOCKED, every write conditional on still owning it.
 */
export type ClaimedJob = { row: AdminJobRow; run: boolean };

export async function startReindexJobPg({ db, store, actor, reason, owner, now = Date.now() }: { db: PgGovernanceExecutor; store: string; actor: string; reason?: string; owner: string; now?: number }): Promise<ClaimedJob> {
  // The job that won the insert can finish between this ask's conflict and its read: then it is asked again (a new job).
  for (let attempt = 1; attempt <= 3; attempt++) {
    const claimed = await claimReindexJobPg({ db, store, actor, reason, owner, now });
    if (claimed) return claimed;
  }
  throw new Error(`reindex of ${store}: no running job after a conflicting insert`);
}

async function claimReindexJobPg({ db, store, actor, reason, owner, now }: { db: PgGovernanceExecutor; store: string; actor: string; reason?: string; owner: string; now: number }): Promise<ClaimedJob | null> {
  return db.transaction(async (tx) => {
    const id = randomUUID();
    const [inserted] = await tx
      .insert(adminJobs)
      .values({ id, kind: "reindex", store, actor, reason: reason ?? null, status: "running", owner, attempts: 1, startedAt: now, heartbeatAt: now })
      .onConflictDoNothing({ target: [adminJobs.kind, adminJobs.store], where: sql`status = 'running'` })
      .returning();
    if (inserted) {
      await appendAuditPg({ db: tx, entry: { actor, action: "store.reindex", target: `store:${store}`, reason: reason ?? null, details: { jobId: id } } });
      return { row: inserted, run: true };
    }
    // Another ask won the insert; its row is committed (the unique index waited for it).
    const [running] = await tx
      .select()
      .from(adminJobs)
      .where(and(eq(adminJobs.kind, "reindex"), eq(adminJobs.store, store), eq(adminJobs.status, "running")));
    return running ? { row: running, run: false } : null;
  });
}

/**
 * Claim one running job whose owner went silent, or null when there is none
 * free. A job that has already died MAX_ATTEMPTS times is closed as failed
 * instead (audited), and the next one is looked at.
 */
export async function takeOverStaleJobPg({ db, owner, store, now = Date.now() }: { db: PgGovernanceExecutor; owner: string; /** Only this store's stale jobs (a request for one store takes over nothing of another's). */ store?: string; now?: number }): Promise<AdminJobRow | null> {
  for (;;) {
    const outcome = await db.transaction(async (tx): Promise<AdminJobRow | "abandoned" | null> => {
      const [stale] = await tx
        .select()
        .from(adminJobs)
        // An archived store's job is left as it is: it resumes once the store is unarchived (as on SQLite).
        .where(and(eq(adminJobs.kind, "reindex"), eq(adminJobs.status, "running"), lt(adminJobs.heartbeatAt, now - JOB_STALE_MS), store === undefined ? undefined : eq(adminJobs.store, store), storeNotArchivedSql(adminJobs.store)))
        .orderBy(asc(adminJobs.startedAt))
        .limit(1)
        .for("update", { skipLocked: true });
      if (!stale) return null;
      return (await writeLedger(pgLedger(tx), takeOverOp({ row: stale, owner, refusal: tooManyAttempts(stale), now }))) ?? "abandoned";
    });
    if (outcome !== "abandoned") return outcome;
  }
}

/** The owner's heartbeat (and progress); false when the job is no longer this owner's (taken over), so its run must stop. */
export async function beatJobPg({ db, id, owner, progressJson, now = Date.now() }: { db: PgGovernanceExecutor; id: string; owner: string; progressJson?: string; now?: number }): Promise<boolean> {
  return setHeldJobPg({ db, id, owner, set: { heartbeatAt: now, ...(progressJson === undefined ? {} : { progressJson }) } });
}

/** Close a job this owner still holds; false when it lost the job meanwhile (the new owner's outcome counts). */
export async function finishJobPg({ db, id, owner, outcome, now = Date.now() }: { db: PgGovernanceExecutor; id: string; owner: string; outcome: { status: "succeeded"; resultJson: string } | { status: "failed"; error: string }; now?: number }): Promise<boolean> {
  const set = outcome.status === "succeeded" ? { status: outcome.status, resultJson: outcome.resultJson } : { status: outcome.status, error: outcome.error };
  return setHeldJobPg({ db, id, owner, set: { ...set, finishedAt: now, heartbeatAt: now } });
}

/** A write to a running job only while `owner` holds it: whether it did. */
async function setHeldJobPg({ db, id, owner, set }: { db: PgGovernanceExecutor; id: string; owner: string; set: Partial<AdminJobRow> }): Promise<boolean> {
  const rows = await db.update(adminJobs).set(set).where(and(eq(adminJobs.id, id), eq(adminJobs.owner, owner), eq(adminJobs.status, "running"))).returning({ id: adminJobs.id });
  return rows.length === 1;
}

/**
 * verify and reindex on PostgreSQL, where the memories table is the truth:
 * verify compares the memories with their documents without writing; reindex
 * rebuilds the derived rows from the memories in one transaction. fts_extra is
 * always 0 (a deleted chunk's statistics go by trigger).
 */

const LIST_CAP = 100;
const MEMORY_DOC = sql`'memory/' || m.path || '.md'`;

export async function verifyStorePg({ handle }: { handle: PgStoreHandle }): Promise<VerifyReport> {
  const started = performance.now();
  return withStoreTx({ handle, readOnly: true, work: async (tx) => {
    const [counts] = await rowsOf<{ memories: number; fileDocuments: number; apiDocuments: number; chunks: number; staleChunks: number; ftsMissing: number }>({
      tx,
      query: sql`select (select count(*)::int from memories) as memories,
        (select count(*)::int from documents where origin = 'file') as "fileDocuments",
        (select count(*)::int from documents where origin = 'api') as "apiDocuments",
        (select count(*)::int from chunks) as chunks,
        (select count(*)::int from chunks where chunking_version <> ${CHUNKING_VERSION}) as "staleChunks",
        (select count(*)::int from chunks where fts_len is null) as "ftsMissing"`,
    });
    const paths = async (query: ReturnType<typeof sql>) => (await rowsOf<{ path: string }>({ tx, query })).map((r) => r.path);
    const notIndexed = await paths(sql`select ${MEMORY_DOC} as path from memories m where not exists (select 1 from documents d where d.path = ${MEMORY_DOC}) order by 1 limit ${LIST_CAP}`);
    // The sha256 of a memory's text is computed here (pgcrypto is not assumed): the texts are read in path order.
    const hashMismatches: string[] = [];
    const pairs = await rowsOf<{ path: string; content: string; sha256: string }>({ tx, query: sql`select d.path, m.content, d.sha256 from memories m join documents d on d.path = ${MEMORY_DOC} order by d.path` });
    for (const p of pairs) if (hashMismatches.length < LIST_CAP && sha256Hex(p.content) !== p.sha256) hashMismatches.push(p.path);
    const missingFiles = await paths(sql`select d.path from documents d where d.origin = 'file' and not exists (select 1 from memories m where ${MEMORY_DOC} = d.path) order by 1 limit ${LIST_CAP}`);
    const usage = await checkStoreUsagePg({ tx, schema: handle.schema });
    const consistent = notIndexed.length === 0 && usageAgrees(usage);
    const inSync = hashMismatches.length === 0 && missingFiles.length === 0 && notIndexed.length === 0 && counts.staleChunks === 0;
    return {
      usage,
      store: handle.store,
      ok: consistent && inSync,
      consistent,
      in_sync: inSync,
      chunking_version: CHUNKING_VERSION,
      counts: { files: counts.memories, file_documents: counts.fileDocuments, api_documents: counts.apiDocuments, chunks: counts.chunks, memories: counts.memories, skipped: 0 },
      integrity: "ok",
      fts_missing: counts.ftsMissing,
      fts_extra: 0,
      memories_without_document: notIndexed.map((p) => p.slice("memory/".length, -".md".length)),
      hash_mismatches: hashMismatches,
      missing_files: missingFiles,
      not_indexed: notIndexed,
      // The memories table is the truth here: there are no files to find unindexable.
      unindexable: [],
      stale_chunks: counts.staleChunks,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
    };
  } });
}

/** Rebuild every memory's document and chunks from its stored text, and drop memory documents whose memory is gone: one transaction. */
export async function rebuildStoreFromMemoriesPg({ handle }: { handle: PgStoreHandle }): Promise<ReindexResult> {
  const started = performance.now();
  const mem: ReindexKindCounts = { scanned: 0, added: 0, changed: 0, unchanged: 0, removed: 0 };
  await withStoreTx({ handle, work: async (tx) => {
    // Rebuilt from the store's own rows: never refused by the byte quota, and the running total is recounted.
    await tx.execute(sql`select set_config('dualmind.max_store_bytes', '', true)`);
    for (const m of await tx.select({ path: memories.path, content: memories.content, updatedAt: memories.updatedAt }).from(memories).orderBy(memories.path)) {
      mem.scanned++;
      mem[(await inCallerTx(tx, indexMemoryOp({ memoryPath: m.path, text: m.content, mtime: m.updatedAt }))).status]++;
    }
    const orphans = await rowsOf<{ path: string }>({ tx, query: sql`select d.path from documents d where d.origin = 'file' and not exists (select 1 from memories m where ${MEMORY_DOC} = d.path) order by 1` });
    for (const o of orphans) if (await inCallerTx(tx, deleteDocumentOp(o.path))) mem.removed++;
    await recountStoreUsagePg({ tx, schema: handle.schema });
  } });
  const none: ReindexKindCounts = { scanned: 0, added: 0, changed: 0, unchanged: 0, removed: 0 };
  return {
    store: handle.store,
    counts: { ...mem, skipped: 0 },
    by_kind: { documents: none, memories: mem },
    skipped_by: { binary: 0, oversized: 0, bad_name: 0, symlink: 0 },
    links_outside_root: [],
    unindexable: [],
    changed_paths: [],
    duration_ms: Math.round((performance.now() - started) * 100) / 100,
  };
}

/** This process, as the owner of the jobs it runs (replicas share no pids: liveness is the heartbeat). */
export const JOB_OWNER = `${process.pid}:${randomUUID()}`;
/** The running job's heartbeat, well inside JOB_STALE_MS, so no replica takes over a live run. */
const HEARTBEAT_MS = 10_000;

/**
 * Run a claimed reindex job: the rebuild, a heartbeat while it runs, then the job closed with its outcome. The
 * promise settles when the job is closed (it never rejects: the outcome is in the row); the API does not wait for it.
 */
export function runReindexJobPg({ pg, handle, jobId }: { pg: PgHandle; handle: PgStoreHandle; jobId: string }): Promise<void> {
  const beat = setInterval(() => void beatJobPg({ db: pg.db, id: jobId, owner: JOB_OWNER }).catch(() => undefined), HEARTBEAT_MS);
  beat.unref();
  return rebuildStoreFromMemoriesPg({ handle })
    .then((result) => finishJobPg({ db: pg.db, id: jobId, owner: JOB_OWNER, outcome: { status: "succeeded", resultJson: JSON.stringify(result) } }))
    .catch(async (e: unknown) => {
      log("error", "reindex on PostgreSQL failed", { store: handle.store, jobId, error: String(e) });
      await finishJobPg({ db: pg.db, id: jobId, owner: JOB_OWNER, outcome: { status: "failed", error: (e as Error).message } }).catch(() => undefined);
    })
    .finally(() => clearInterval(beat))
    .then(() => undefined);
}

/**
 * The same job, run to the end before returning (the CLI; the twin of
 * runReindexJob, ./jobs.ts): claimed as POST /stores/{store}/reindex claims
 * it (one running job per store across replicas, its audit row) and run here
 * when this ask claimed it. A reindex another replica is running is waited
 * for, and taken over (audited, as by any replica) if that replica stops
 * beating its heartbeat, so it is never run twice at once.
 */
export async function runReindexJobToEndPg({ pg, handle, actor, reason }: { pg: PgHandle; handle: PgStoreHandle; actor: string; reason?: string }): Promise<Job> {
  const claimed = await startReindexJobPg({ db: pg.db, store: handle.store, actor, reason, owner: JOB_OWNER });
  if (claimed.run) await runReindexJobPg({ pg, handle, jobId: claimed.row.id });
  return waitForJob({
    ledger: pgLedger(pg.db),
    id: claimed.row.id,
    takeOver: (row) => (Date.now() - row.heartbeatAt > JOB_STALE_MS ? takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER, store: handle.store }) : null),
    run: (row) => runReindexJobPg({ pg, handle, jobId: row.id }),
  });
}
