import { eq, isNull, lte, ne, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { PgColumn } from "drizzle-orm/pg-core";
import type { StoreHandle } from "../db/connection";
import { count, engineStep, read, row, rows, storeLock, tablePair, upsert, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import type { PgStoreHandle, PgStoreTx } from "../db/pg-store";
import { embeddings, embedQueue } from "../db/schema/embed";
import { meta } from "../db/schema/index";
import * as pgStore from "../db/schema/pg/store";
import { AppError } from "../errors";
import { auditStep } from "../governance/audit";
import { listEmbeddables, type EmbeddableRef } from "./embeddables";
import { getActiveFingerprintId, readActiveFingerprintId, rememberFingerprint, setActiveFingerprintId } from "./model";
import type { Fingerprint } from "./providers";
import { enqueueEmbeddings, type EmbedItem } from "./queue";
import { dropAnnIndexesExcept } from "./ann-index";
import { vecIndexTable } from "./vector-index";

type ReembedJob = {
  target_fingerprint_id: string;
  only_stale: boolean;
  /** Build the new vectors but wait for an admin to switch (after comparing). */
  hold_switch: boolean;
  /** The job's own items: what needed a vector when it started (items ingested later are not counted). */
  total: number;
  started_at: number;
  started_by: string;
  /**
   * running: its items are being embedded; waiting_switch: they are, and a
   * held switch waits for an admin; done: finished (kept, so a reload still says so).
   */
  status: "running" | "waiting_switch" | "done";
  /**
   * The job's items were queued at or before this time. Queue rows enqueued
   * later belong to ingest, not to this job; an item already queued keeps its
   * enqueued_at when queued again, so an edit during the job stays counted.
   */
  queued_until: number;
  finished_at: number | null;
};

/**
 * What the self-recall gate said before an admin's switch (lib/eval/gate.ts):
 * passed (the new model finds the store's own probes as well, within the
 * noise), overridden (it finds them worse, and an admin said why to go
 * ahead: a ledger override), or unmeasured (no figure of the old model to
 * compare with). Recorded in the switch's audit row.
 */
export type SwitchGate = {
  verdict: "passed" | "overridden" | "unmeasured";
  reason: string;
  before: number | null;
  after: number | null;
  noise: number | null;
  override_id: string | null;
};

export type ReembedProgress = ReembedJob & { done: number; remaining: number; rate_per_sec: number | null; eta_seconds: number | null };

const JOB_KEY = "reembed_job";

/** A job's keys as rows written before the snake_case spelling have them. */
type OldJobSpelling = { targetFingerprintId?: string; onlyStale?: boolean; holdSwitch?: boolean; startedAt?: number; startedBy?: string; queuedUntil?: number; finishedAt?: number | null };

/**
 * The job as stored (JSON in the store's meta row, on both backends), in either spelling. Jobs written
 * before status existed: running, and every queued row counts.
 */
function reembedJobOf(stored: Partial<ReembedJob> & OldJobSpelling): ReembedJob {
  return {
    target_fingerprint_id: stored.target_fingerprint_id ?? stored.targetFingerprintId ?? "",
    only_stale: stored.only_stale ?? stored.onlyStale ?? false,
    hold_switch: stored.hold_switch ?? stored.holdSwitch ?? false,
    total: stored.total ?? 0,
    started_at: stored.started_at ?? stored.startedAt ?? 0,
    started_by: stored.started_by ?? stored.startedBy ?? "",
    status: stored.status ?? "running",
    queued_until: stored.queued_until ?? stored.queuedUntil ?? Number.MAX_SAFE_INTEGER,
    finished_at: stored.finished_at ?? stored.finishedAt ?? null,
  };
}

/** A job as stored; PostgreSQL's also bounds its own queue rows by id (replicas' clocks differ). */
type StoredJob = ReembedJob & { queue_id_until?: number };

const META = tablePair(meta, pgStore.storeMeta);
const QUEUE = tablePair(embedQueue, pgStore.embedQueue);

function* readJobOp(): Op<StoredJob | null> {
  const r = yield* row(META, (t) => eq(t.key, JOB_KEY));
  if (!r) return null;
  const stored = JSON.parse(r.value) as Parameters<typeof reembedJobOf>[0] & { queue_id_until?: number; queueIdUntil?: number };
  const idUntil = stored.queue_id_until ?? stored.queueIdUntil;
  return { ...reembedJobOf(stored), ...(idUntil !== undefined ? { queue_id_until: idUntil } : {}) };
}

function* writeJobOp(job: StoredJob): Op<void> {
  const value = JSON.stringify(job);
  yield* upsert(META, { key: JOB_KEY, value }, (t) => t.key, { value });
}

/** The job's own queue rows (parked ones included: they still need their vector). */
const ownRows = (job: StoredJob) => (t: { id: SQLiteColumn | PgColumn; enqueuedAt: SQLiteColumn | PgColumn }): SQL => (job.queue_id_until !== undefined ? lte(t.id, job.queue_id_until) : lte(t.enqueuedAt, job.queued_until));

/**
 * What re-embed asks of an engine: where the active model and the vectors live, and how the artifacts needing a
 * vector are found and queued. The rules around them (resume, hold, switch, audit) are written once below.
 */
export type ReembedEngine = {
  readActive(): Op<string | null>;
  /** A store's first re-embed makes the configured model its active one; an active model is never replaced here. */
  adopt(configured: Fingerprint): Op<void>;
  /** Texts rendered by an older version of their kind's rules are re-rendered: how many. */
  backfill(): Op<number>;
  countNeeding(target: string): Op<number>;
  /** Queue every artifact that needs a vector of `target`: how many. */
  enqueueNeeding(target: string, now: number): Op<number>;
  /** What bounds the job's own queue rows beside its time (queued_until). */
  window(): Op<Partial<StoredJob>>;
  oldVectors(target: string): Op<number>;
  /** Artifacts still without a vector of `target` when nothing is queued, just before a switch. */
  missingBeforeSwitch(target: string, store: string): Op<number>;
  /** Make `target` the active model and delete every other model's vectors: the models dropped. */
  switchTo(target: string): Op<string[]>;
};

/** A step only SQLite takes (its engine's half of ReembedEngine). */
const onSqlite = <T>(fn: (handle: StoreHandle) => T): Op<T> => engineStep({ sqlite: fn, pg: () => Promise.reject(new Error("a SQLite re-embed step ran on PostgreSQL")) });
/** A step only PostgreSQL takes. */
export const onPg = <T>(fn: (tx: PgStoreTx, handle: PgStoreHandle) => Promise<T>): Op<T> =>
  engineStep({
    sqlite: () => {
      throw new Error("a PostgreSQL re-embed step ran on SQLite");
    },
    pg: fn,
  });

/** Artifacts that still need a vector from `target` for their current text. */
function itemsNeedingVectors({ handle, target }: { handle: StoreHandle; target: string }): EmbedItem[] {
  const has = handle.sqlite.prepare("select input_hash as h from embeddings where kind = ? and ref_id = ? and fingerprint_id = ?");
  const items: EmbedItem[] = [];
  for (const e of listEmbeddables()) {
    let all: EmbeddableRef[];
    try {
      all = [...e.listAll({ handle })];
    } catch {
      continue;
    }
    for (const a of all) {
      const row = has.get(e.kind, a.refId, target) as { h: string } | undefined;
      if (!row || row.h !== a.inputHash) items.push({ kind: e.kind, refId: a.refId, inputHash: a.inputHash });
    }
  }
  return items;
}

const SQLITE: ReembedEngine = {
  readActive: () => onSqlite((handle) => readActiveFingerprintId({ handle }) ?? null),
  adopt: (configured) =>
    onSqlite((handle) => {
      getActiveFingerprintId({ handle, configured });
      rememberFingerprint({ handle, fingerprint: configured });
    }),
  backfill: () => onSqlite((handle) => listEmbeddables().reduce((n, e) => n + (e.backfill?.({ handle }) ?? 0), 0)),
  countNeeding: (target) => onSqlite((handle) => itemsNeedingVectors({ handle, target }).length),
  enqueueNeeding: (target) =>
    onSqlite((handle) => {
      const items = itemsNeedingVectors({ handle, target });
      enqueueEmbeddings({ handle, items });
      return items.length;
    }),
  window: () => onSqlite(() => ({})),
  oldVectors: (target) => count(tablePair(embeddings, pgStore.embeddings), (t) => ne(t.fingerprintId, target)),
  missingBeforeSwitch: (target) => SQLITE.countNeeding(target),
  switchTo: (target) =>
    onSqlite((handle) => {
      const others = handle.db.selectDistinct({ id: embeddings.fingerprintId }).from(embeddings).where(ne(embeddings.fingerprintId, target)).all().map((r) => r.id);
      setActiveFingerprintId({ handle, fingerprintId: target });
      handle.db.delete(embeddings).where(ne(embeddings.fingerprintId, target)).run();
      for (const id of others) handle.sqlite.exec(`drop table if exists ${vecIndexTable(id)}`);
      return others;
    }),
};

/** T, or a promise of it: the next step on either engine. */
function then<A, B>(v: A | Promise<A>, f: (a: A) => B | Promise<B>): B | Promise<B> {
  return v instanceof Promise ? v.then(f) : f(v);
}

export type ReembedEstimate = { to_embed: number; target_fingerprint_id: string; model_changed: boolean; estimated_seconds: number | null };

function* modelChangedOp(engine: ReembedEngine, { configured, onlyStale }: { configured: Fingerprint; onlyStale: boolean }): Op<boolean> {
  const modelChanged = ((yield* engine.readActive()) ?? configured.id) !== configured.id;
  if (onlyStale && modelChanged) {
    throw new AppError("conflict", "the configured model differs from the store's active model: only a full re-embed can switch models");
  }
  return modelChanged;
}

function* estimateOp(engine: ReembedEngine, { configured, onlyStale, ratePerSec }: { configured: Fingerprint; onlyStale: boolean; ratePerSec?: number }): Op<ReembedEstimate> {
  const modelChanged = yield* modelChangedOp(engine, { configured, onlyStale });
  const toEmbed = yield* engine.countNeeding(configured.id);
  return { to_embed: toEmbed, target_fingerprint_id: configured.id, model_changed: modelChanged, estimated_seconds: ratePerSec ? toEmbed / ratePerSec : null };
}

/** What a re-embed would do, before starting it. `ratePerSec` comes from measured worker throughput when known. */
export function estimateReembedOn<H extends AnyStoreHandle>({ engine, handle, ...args }: { engine: ReembedEngine; handle: H; configured: Fingerprint; onlyStale: boolean; ratePerSec?: number }): On<H, ReembedEstimate> {
  return read(handle, estimateOp(engine, args), { snapshot: true });
}

export type ReembedIntent = "start" | "start_stale" | "start_hold" | "switch";

/**
 * What a re-embed intent would do, said in counts, before an admin confirms
 * it. A running job is said to continue; nothing to do is said so (and the
 * start then starts no job).
 */
export function describeReembedIntentOn<H extends AnyStoreHandle>({ engine, handle, configured, intent }: { engine: ReembedEngine; handle: H; configured: Fingerprint; intent: ReembedIntent }): On<H, string> {
  const n = (x: number) => x.toLocaleString("en-US");
  return read(
    handle,
    (function* (): Op<string> {
      const job = yield* readJobOp();
      if (intent === "switch") {
        if (!job || job.status === "done") return "There is no re-embed waiting for a switch.";
        const old = yield* engine.oldVectors(job.target_fingerprint_id);
        return `Switches the store to ${job.target_fingerprint_id} now and deletes ${n(old)} vector(s) of the previous model. Vector search uses the new model from then on.`;
      }
      if (job && job.status !== "done" && job.target_fingerprint_id === configured.id) {
        const p = reembedProgressOf({ job, queued: yield* count(QUEUE, ownRows(job)) });
        return `A re-embed to ${configured.provider}:${configured.model} is already running (${n(p.done)} of ${n(p.total)} done): confirming resumes it; no second job starts.`;
      }
      return describeStartIntent({ configured, intent, estimate: yield* estimateOp(engine, { configured, onlyStale: intent === "start_stale" }) });
    })(),
    { snapshot: true },
  );
}

/** What starting a re-embed would do, from its estimate (the confirmation text). */
function describeStartIntent({ configured, intent, estimate: e }: { configured: Fingerprint; intent: "start" | "start_stale" | "start_hold"; estimate: ReembedEstimate }): string {
  const model = `${configured.provider}:${configured.model}`;
  if (e.to_embed === 0 && !e.model_changed) return `Nothing to re-embed: every item already has a current vector from ${model}. No job will start.`;
  const scope = intent === "start_stale" ? "stale item(s) (text changed since their vector was made)" : "item(s) without a current vector";
  const switchText = e.model_changed
    ? intent === "start_hold"
      ? " The current model keeps serving; when the new vectors are built, an admin compares and switches."
      : " This is a model change: the current model keeps serving until every item has its new vector, then the store switches."
    : "";
  return `Embeds ${e.to_embed.toLocaleString("en-US")} ${scope} with ${model}.${switchText} Items ingested meanwhile are embedded too but do not count in this job.`;
}

export type StartReembedResult = { started: true; job: ReembedProgress } | { started: false; reason: string };

function* startOp(engine: ReembedEngine, { store, configured, onlyStale, holdSwitch, actor }: { store: string; configured: Fingerprint; onlyStale: boolean; holdSwitch: boolean; actor: string }): Op<StartReembedResult | null> {
  const target = `store:${store}`;
  yield* storeLock("reembed");
  yield* engine.adopt(configured);
  // Refuse first (e.g. stale-only across a model change), then backfill: texts rendered by an older version of
  // their kind's rules are re-rendered, so the items queued below get vectors of the current text.
  const modelChanged = yield* modelChangedOp(engine, { configured, onlyStale });
  const backfilled = yield* engine.backfill();
  if (backfilled > 0) yield* auditStep({ actor, action: "store.reembed.backfill", target, details: { backfilled } });
  const existing = yield* readJobOp();
  const resume = existing !== null && existing.status !== "done" && existing.target_fingerprint_id === configured.id;
  // A resume takes on what needs a vector now: what the job had already done, plus these items.
  const doneBefore = resume ? existing.total - Math.min(existing.total, yield* count(QUEUE, ownRows(existing))) : 0;
  const queued = yield* engine.enqueueNeeding(configured.id, Date.now());
  // Taken after the items are queued: every one of them was queued at or before it.
  const now = Date.now();
  if (!resume && queued === 0 && !modelChanged) return { started: false, reason: `every item already has a current vector from ${configured.provider}:${configured.model}` };
  const window = yield* engine.window();
  const job: StoredJob = resume
    ? { ...existing, total: doneBefore + queued, queued_until: now, ...window }
    : { target_fingerprint_id: configured.id, only_stale: onlyStale, hold_switch: holdSwitch, total: queued, started_at: now, started_by: actor, status: "running", queued_until: now, finished_at: null, ...window };
  yield* writeJobOp(job);
  yield* auditStep({ actor, action: resume ? "store.reembed.resume" : "store.reembed.start", target, details: { target: configured.id, onlyStale, toEmbed: queued } });
  return null;
}

/**
 * Start (or resume) a re-embed towards the configured model. New vectors go
 * beside the active ones; the active model keeps serving until every artifact
 * has a new vector, then `finishReembedIfDone` switches in one transaction.
 * The queue is durable, so a crash resumes. One write under the store's
 * re-embed lock queues the items, writes the job and its audit row, so
 * replicas never start two jobs. With nothing to embed and no model to switch
 * to, no job starts and the answer says why.
 */
export function startReembedOn<H extends AnyStoreHandle>({ engine, handle, configured, onlyStale, holdSwitch = false, actor, finish }: { engine: ReembedEngine; handle: H; configured: Fingerprint; onlyStale: boolean; holdSwitch?: boolean; actor: string; finish: (a: { handle: H; actor: string }) => boolean | Promise<boolean> }): On<H, StartReembedResult> {
  return then(write(handle, startOp(engine, { store: handle.store, configured, onlyStale, holdSwitch, actor })), (refused) =>
    refused ??
    // A model switch with every new vector already there (or an empty store) finishes at once.
    then(finish({ handle, actor }), () => then(reembedProgressOn(handle), (job) => ({ started: true as const, job: job! }))),
  ) as On<H, StartReembedResult>;
}

/** The store's re-embed, running or the last one finished; null if there never was one. */
function reembedProgressOn<H extends AnyStoreHandle>(handle: H): On<H, ReembedProgress | null> {
  return read(
    handle,
    (function* (): Op<ReembedProgress | null> {
      const job = yield* readJobOp();
      return job && reembedProgressOf({ job, queued: job.status === "done" ? 0 : yield* count(QUEUE, ownRows(job)) });
    })(),
    { snapshot: true },
  );
}

/** A job's progress from how many of its own items are still queued. */
function reembedProgressOf<J extends ReembedJob>({ job: { queue_id_until: _internal, ...job }, queued }: { job: J & { queue_id_until?: number }; queued: number }): ReembedProgress {
  const remaining = job.status === "done" ? 0 : Math.min(job.total, queued);
  const done = job.total - remaining;
  const elapsed = ((job.finished_at ?? Date.now()) - job.started_at) / 1000;
  const ratePerSec = done > 0 && elapsed > 0 ? done / elapsed : null;
  return { ...job, done, remaining, rate_per_sec: ratePerSec, eta_seconds: ratePerSec && remaining > 0 ? remaining / ratePerSec : null };
}

function* finishOp(engine: ReembedEngine, { store, actor, force, gate }: { store: string; actor: string; force: boolean; gate?: SwitchGate }): Op<"no" | "done" | "switched"> {
  yield* storeLock("reembed");
  const job = yield* readJobOp();
  if (!job || job.status === "done") return "no";
  if ((yield* rows(QUEUE, { where: ownRows(job), limit: 1 })).length > 0) return "no";
  const target = `store:${store}`;
  const finished: StoredJob = { ...job, status: "done", finished_at: Date.now() };
  if ((yield* engine.readActive()) === job.target_fingerprint_id) {
    yield* writeJobOp(finished);
    yield* auditStep({ actor, action: "store.reembed.done", target, details: { target: job.target_fingerprint_id, embedded: job.total } });
    return "done";
  }
  if (job.hold_switch && !force) {
    if (job.status !== "waiting_switch") yield* writeJobOp({ ...job, status: "waiting_switch" });
    return "no";
  }
  if ((yield* count(QUEUE, (t) => isNull(t.parkedAt))) > 0 || (yield* engine.missingBeforeSwitch(job.target_fingerprint_id, store)) > 0) return "no";
  const dropped = yield* engine.switchTo(job.target_fingerprint_id);
  yield* writeJobOp(finished);
  // The gate as the audit chain's rows have always spelled it (overrideId).
  const audited = gate && { ...gate, override_id: undefined, overrideId: gate.override_id };
  yield* auditStep({ actor, action: "store.reembed.switch", target, details: { active: job.target_fingerprint_id, dropped, ...(audited ? { gate: audited } : {}) } });
  return "switched";
}

/**
 * Finish a re-embed whose own items all have their new vector. Same model
 * (stale rows): done. A model switch waits until every artifact has a vector
 * from the target (items ingested meanwhile too: the new model must cover
 * them all), then activates it, drops the other models' vectors and marks
 * the job done, in one transaction: readers see the old model or the new
 * one, never a mix. A held switch waits for an admin (`force`). Without an
 * actor it is the embed worker finishing the job on its own (every
 * replica's, under the store's re-embed lock: exactly one finishes).
 */
export function finishReembedIfDoneOn<H extends AnyStoreHandle>({ engine, handle, actor = "system:embed-worker", force = false, gate, switched }: { engine: ReembedEngine; handle: H; actor?: string; force?: boolean; gate?: SwitchGate; switched?: (target: string) => void }): On<H, boolean> {
  return then(read(handle, readJobOp()), (open) =>
    !open || open.status === "done"
      ? false
      : then(write(handle, finishOp(engine, { store: handle.store, actor, force, gate })), (r) => {
          if (r === "switched") switched?.(open.target_fingerprint_id);
          return r !== "no";
        }),
  ) as On<H, boolean>;
}

/** An admin's switch of a held re-embed, after the self-recall gate; 409 until every artifact has its new vector. */
export function switchHeldReembedOn<H extends AnyStoreHandle>({ engine, handle, actor, gate, switched }: { engine: ReembedEngine; handle: H; actor: string; gate?: SwitchGate; switched?: (target: string) => void }): On<H, void> {
  return then(read(handle, readJobOp()), (job) => {
    if (!job || job.status === "done") throw new AppError("conflict", "no re-embed in progress");
    return then(finishReembedIfDoneOn({ engine, handle, actor, force: true, gate, switched }), (finished) => {
      if (!finished) throw new AppError("conflict", "the re-embed is not finished yet: every artifact needs its new vector before the switch");
    });
  }) as On<H, void>;
}

// SQLite: the vectors live in the store's `embeddings` table with one vec index (and ANN index) per model.
type SqliteArgs<F extends (a: never) => unknown> = Omit<Parameters<F>[0], "engine" | "handle" | "finish" | "switched"> & { handle: StoreHandle };
const dropOtherAnnIndexes = (handle: StoreHandle) => (target: string) => dropAnnIndexesExcept({ source: { db: handle.sqlite, schema: "main" }, keepFingerprintId: target });

export const estimateReembed = (a: SqliteArgs<typeof estimateReembedOn>): ReembedEstimate => estimateReembedOn({ engine: SQLITE, ...a });
export const describeReembedIntent = (a: SqliteArgs<typeof describeReembedIntentOn>): string => describeReembedIntentOn({ engine: SQLITE, ...a });
export const getReembedProgress = ({ handle }: { handle: StoreHandle }): ReembedProgress | null => reembedProgressOn(handle);
export const finishReembedIfDone = (a: SqliteArgs<typeof finishReembedIfDoneOn>): boolean => finishReembedIfDoneOn({ engine: SQLITE, ...a, switched: dropOtherAnnIndexes(a.handle) });
export const startReembed = (a: SqliteArgs<typeof startReembedOn>): StartReembedResult => startReembedOn({ engine: SQLITE, ...a, finish: finishReembedIfDone });
export const switchHeldReembed = (a: SqliteArgs<typeof switchHeldReembedOn>): void => switchHeldReembedOn({ engine: SQLITE, ...a, switched: dropOtherAnnIndexes(a.handle) });
/** Progress on either engine (the job's rows are the same). */
export { reembedProgressOn as getReembedProgressOn };
