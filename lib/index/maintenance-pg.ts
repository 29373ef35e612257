import { randomUUID } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import { sha256Hex } from "../common";
import type { PgHandle } from "../db/pg";
import { rowsOf, withStoreTx, type PgStoreHandle } from "../db/pg-store";
import { adminJobs } from "../db/schema/pg/governance";
import { memories } from "../db/schema/pg/store";
import { log } from "../log";
import { beatJobPg, finishJobPg, startReindexJobPg, takeOverStaleJobPg } from "./admin-jobs-pg";
import { CHUNKING_VERSION } from "./chunking";
import { deleteDocumentByPathPg } from "./ingest-pg";
import { JOB_STALE_MS, jobFromRow, type Job } from "./jobs";
import { putMemoryTextPg } from "./memories-pg";
import type { ReindexKindCounts, ReindexResult } from "./reindex";
import type { VerifyReport } from "./verify";

/**
 * verify and reindex on PostgreSQL, where the memories table is the truth
 * (lib/index/memories-pg.ts) and a memory's document + chunks are derived
 * from its stored text, as a SQLite store's are from its memory/ folder:
 * - verify compares the memories rows (the "files") with their documents,
 *   without writing: a memory with no document (not indexed), a document
 *   whose sha256 is not its memory's (hash mismatch), a memory document with
 *   no memory (missing file), chunks of another chunking version (stale);
 * - reindex rebuilds the derived rows from the memories in one transaction
 *   (a crash leaves the previous index), as an admin job claimed in
 *   admin_jobs (lib/index/admin-jobs-pg.ts: one running per store across
 *   replicas). API documents are kept as they are, as on SQLite.
 * The tsvector is a generated column and the bm25 statistics are written with
 * each chunk (engines/pg-fulltext.ts): fts_missing counts the chunks still
 * waiting for their statistics (a store from before them, until the backfill
 * job ends); fts_extra is always 0 (a deleted chunk's go by trigger).
 */

const LIST_CAP = 100;
const MEMORY_DOC = sql`'memory/' || m.path || '.md'`;

export async function verifyStorePg({ handle }: { handle: PgStoreHandle }): Promise<VerifyReport> {
  const started = performance.now();
  return withStoreTx({ handle, readOnly: true }, async (tx) => {
    const [counts] = await rowsOf<{ memories: number; fileDocuments: number; apiDocuments: number; chunks: number; staleChunks: number; ftsMissing: number }>(
      tx,
      sql`select (select count(*)::int from memories) as memories,
        (select count(*)::int from documents where origin = 'file') as "fileDocuments",
        (select count(*)::int from documents where origin = 'api') as "apiDocuments",
        (select count(*)::int from chunks) as chunks,
        (select count(*)::int from chunks where chunking_version <> ${CHUNKING_VERSION}) as "staleChunks",
        (select count(*)::int from chunks where fts_len is null) as "ftsMissing"`,
    );
    const paths = async (query: ReturnType<typeof sql>) => (await rowsOf<{ path: string }>(tx, query)).map((r) => r.path);
    const notIndexed = await paths(sql`select ${MEMORY_DOC} as path from memories m where not exists (select 1 from documents d where d.path = ${MEMORY_DOC}) order by 1 limit ${LIST_CAP}`);
    // The sha256 of a memory's text is computed here (pgcrypto is not assumed): the texts are read in path order.
    const hashMismatches: string[] = [];
    const pairs = await rowsOf<{ path: string; content: string; sha256: string }>(tx, sql`select d.path, m.content, d.sha256 from memories m join documents d on d.path = ${MEMORY_DOC} order by d.path`);
    for (const p of pairs) if (hashMismatches.length < LIST_CAP && sha256Hex(p.content) !== p.sha256) hashMismatches.push(p.path);
    const missingFiles = await paths(sql`select d.path from documents d where d.origin = 'file' and not exists (select 1 from memories m where ${MEMORY_DOC} = d.path) order by 1 limit ${LIST_CAP}`);
    const consistent = notIndexed.length === 0;
    const inSync = hashMismatches.length === 0 && missingFiles.length === 0 && notIndexed.length === 0 && counts.staleChunks === 0;
    return {
      store: handle.store,
      ok: consistent && inSync,
      consistent,
      inSync,
      chunkingVersion: CHUNKING_VERSION,
      counts: { files: counts.memories, fileDocuments: counts.fileDocuments, apiDocuments: counts.apiDocuments, chunks: counts.chunks, memories: counts.memories, skipped: 0 },
      integrity: "ok",
      ftsMissing: counts.ftsMissing,
      ftsExtra: 0,
      memoriesWithoutDocument: notIndexed.map((p) => p.slice("memory/".length, -".md".length)),
      hashMismatches,
      missingFiles,
      notIndexed,
      // The memories table is the truth here: there are no files to find unindexable.
      unindexable: [],
      staleChunks: counts.staleChunks,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
    };
  });
}

/** Rebuild every memory's document and chunks from its stored text, and drop memory documents whose memory is gone: one transaction. */
export async function rebuildStoreFromMemoriesPg({ handle }: { handle: PgStoreHandle }): Promise<ReindexResult> {
  const started = performance.now();
  const mem: ReindexKindCounts = { scanned: 0, added: 0, changed: 0, unchanged: 0, removed: 0 };
  await withStoreTx({ handle }, async (tx) => {
    for (const m of await tx.select({ path: memories.path, content: memories.content, updatedAt: memories.updatedAt }).from(memories).orderBy(memories.path)) {
      mem.scanned++;
      mem[(await putMemoryTextPg({ tx, memoryPath: m.path, text: m.content, mtime: m.updatedAt })).status]++;
    }
    const orphans = await rowsOf<{ path: string }>(tx, sql`select d.path from documents d where d.origin = 'file' and not exists (select 1 from memories m where ${MEMORY_DOC} = d.path) order by 1`);
    for (const o of orphans) if (await deleteDocumentByPathPg({ tx, path: o.path })) mem.removed++;
  });
  const none: ReindexKindCounts = { scanned: 0, added: 0, changed: 0, unchanged: 0, removed: 0 };
  return {
    store: handle.store,
    counts: { ...mem, skipped: 0 },
    byKind: { documents: none, memories: mem },
    skippedBy: { binary: 0, oversized: 0, badName: 0, symlink: 0 },
    linksOutsideRoot: [],
    unindexable: [],
    changedPaths: [],
    durationMs: Math.round((performance.now() - started) * 100) / 100,
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
 * Start (or join) the store's reindex job: the ask that claims the job runs
 * it (runReindexJobPg); an ask while one runs gets that job. Answers the job
 * as it is now.
 */
export async function startReindexJobOnPg({ pg, handle, actor, reason }: { pg: PgHandle; handle: PgStoreHandle; actor: string; reason?: string }): Promise<Job> {
  const claimed = await startReindexJobPg({ db: pg.db, store: handle.store, actor, reason, owner: JOB_OWNER });
  if (claimed.run) void runReindexJobPg({ pg, handle, jobId: claimed.row.id });
  return jobFromRow(claimed.row);
}

const WAIT_POLL_MS = 250;

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
  for (;;) {
    const job = await getJobByIdPg({ pg, id: claimed.row.id, stores: null });
    if (!job) throw new Error(`reindex job ${claimed.row.id} disappeared`);
    if (job.status !== "running") return job;
    const taken = Date.now() - job.heartbeatAt > JOB_STALE_MS ? await takeOverStaleJobPg({ db: pg.db, owner: JOB_OWNER, store: handle.store }) : null;
    if (taken) await runReindexJobPg({ pg, handle, jobId: taken.id });
    else await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
  }
}

/** A job by id; a store-limited caller sees only its stores' jobs (another's answers like an unknown one). */
export async function getJobByIdPg({ pg, id, stores }: { pg: PgHandle; id: string; stores: readonly string[] | null }): Promise<Job | null> {
  const [row] = await pg.db.select().from(adminJobs).where(and(eq(adminJobs.id, id), eq(adminJobs.kind, "reindex")));
  if (!row || (stores !== null && !stores.includes(row.store))) return null;
  return jobFromRow(row);
}

/** Each store's latest admin job (the Admin page's reindex list), as listLatestJobs answers on SQLite. */
export async function listLatestJobsPg({ pg }: { pg: PgHandle }): Promise<Job[]> {
  const rows = await pg.db
    .select()
    .from(adminJobs)
    .where(sql`${adminJobs.kind} = 'reindex' and ${adminJobs.startedAt} = (select max(k.started_at) from admin_jobs k where k.store = ${adminJobs.store} and k.kind = 'reindex')`)
    .orderBy(adminJobs.store);
  return rows.map(jobFromRow);
}
