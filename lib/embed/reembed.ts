import { count, eq, isNull, lte, ne } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { embeddings, embedQueue } from "../db/schema/embed";
import { meta } from "../db/schema/index";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { listEmbeddables, type EmbeddableRef } from "./embeddables";
import { getActiveFingerprintId, readActiveFingerprintId, rememberFingerprint, setActiveFingerprintId } from "./model";
import type { Fingerprint } from "./providers";
import { enqueueEmbeddings, type EmbedItem } from "./queue";
import { dropAnnIndexesExcept } from "./ann-index";
import { vecIndexTable } from "./vector-index";

export type ReembedJob = {
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

/** The gate as the switch's audit row records it: in the spelling the audit chain's rows have always had. */
export function auditedGate({ override_id, ...gate }: SwitchGate): Omit<SwitchGate, "override_id"> & { overrideId: string | null } {
  return { ...gate, overrideId: override_id };
}

export type ReembedProgress = ReembedJob & { done: number; remaining: number; rate_per_sec: number | null; eta_seconds: number | null };

const JOB_KEY = "reembed_job";

/** A job's keys as rows written before the snake_case spelling have them. */
type OldJobSpelling = { targetFingerprintId?: string; onlyStale?: boolean; holdSwitch?: boolean; startedAt?: number; startedBy?: string; queuedUntil?: number; finishedAt?: number | null };

/**
 * The job as stored (JSON in the store's meta row, on both backends), in either spelling. Jobs written
 * before status existed: running, and every queued row counts.
 */
export function reembedJobOf(stored: Partial<ReembedJob> & OldJobSpelling): ReembedJob {
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

function readJob({ handle }: { handle: StoreHandle }): ReembedJob | null {
  const row = handle.db.select({ value: meta.value }).from(meta).where(eq(meta.key, JOB_KEY)).get();
  return row ? reembedJobOf(JSON.parse(row.value) as Parameters<typeof reembedJobOf>[0]) : null;
}

function writeJob({ handle, job }: { handle: StoreHandle; job: ReembedJob }): void {
  const value = JSON.stringify(job);
  handle.db.insert(meta).values({ key: JOB_KEY, value }).onConflictDoUpdate({ target: meta.key, set: { value } }).run();
}

/** The job's items still queued (parked ones included: they still need their vector). One count over the queue, no scan of the artifacts. */
function ownItemsRemaining({ handle, job }: { handle: StoreHandle; job: ReembedJob }): number {
  return handle.db.select({ n: count() }).from(embedQueue).where(lte(embedQueue.enqueuedAt, job.queued_until)).get()?.n ?? 0;
}

/** Artifacts that still need a vector from `target` for their current text. */
function itemsNeedingVectors({ handle, target }: { handle: StoreHandle; target: string }): EmbedItem[] {
  const { sqlite } = handle;
  const has = sqlite.prepare("select input_hash as h from embeddings where kind = ? and ref_id = ? and fingerprint_id = ?");
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

export type ReembedEstimate = { to_embed: number; target_fingerprint_id: string; model_changed: boolean; estimated_seconds: number | null };

/** What a re-embed would do, before starting it. `ratePerSec` comes from measured worker throughput when known. */
export function estimateReembed({ handle, configured, onlyStale, ratePerSec }: { handle: StoreHandle; configured: Fingerprint; onlyStale: boolean; ratePerSec?: number }): ReembedEstimate {
  const active = getActiveFingerprintId({ handle, configured });
  const modelChanged = active !== configured.id;
  if (onlyStale && modelChanged) {
    throw new AppError("conflict", "the configured model differs from the store's active model: only a full re-embed can switch models");
  }
  const toEmbed = itemsNeedingVectors({ handle, target: configured.id }).length;
  return { to_embed: toEmbed, target_fingerprint_id: configured.id, model_changed: modelChanged, estimated_seconds: ratePerSec ? toEmbed / ratePerSec : null };
}

/**
 * What a re-embed intent would do, said in counts, before an admin confirms
 * it. A running job is said to continue; nothing to do is said so (and the
 * start then starts no job).
 */
export function describeReembedIntent({ handle, configured, intent }: { handle: StoreHandle; configured: Fingerprint; intent: ReembedIntent }): string {
  const job = readJob({ handle });
  return describeIntentOf({
    configured,
    intent,
    job,
    oldVectors: () => handle.db.select({ n: count() }).from(embeddings).where(ne(embeddings.fingerprintId, job!.target_fingerprint_id)).get()?.n ?? 0,
    progress: () => getReembedProgress({ handle })!,
    estimate: (onlyStale) => estimateReembed({ handle, configured, onlyStale }),
  });
}

export type ReembedIntent = "start" | "start_stale" | "start_hold" | "switch";

/** The confirmation text of a re-embed intent from the store's job and what it would take (both backends: the callbacks read T or a promise of it). */
export function describeIntentOf<T extends string | Promise<string>>({ configured, intent, job, oldVectors, progress, estimate }: {
  configured: Fingerprint;
  intent: ReembedIntent;
  job: ReembedJob | null;
  oldVectors: () => number | Promise<number>;
  progress: () => ReembedProgress | Promise<ReembedProgress>;
  estimate: (onlyStale: boolean) => ReembedEstimate | Promise<ReembedEstimate>;
}): T {
  const then = <A, B>(v: A | Promise<A>, f: (a: A) => B): B | Promise<B> => (v instanceof Promise ? v.then(f) : f(v));
  const n = (x: number) => x.toLocaleString("en-US");
  if (intent === "switch") {
    if (!job || job.status === "done") return "There is no re-embed waiting for a switch." as T;
    return then(oldVectors(), (old) => `Switches the store to ${job.target_fingerprint_id} now and deletes ${n(old)} vector(s) of the previous model. Vector search uses the new model from then on.`) as T;
  }
  if (job && job.status !== "done" && job.target_fingerprint_id === configured.id) {
    return then(progress(), (p) => `A re-embed to ${configured.provider}:${configured.model} is already running (${n(p.done)} of ${n(p.total)} done): confirming resumes it; no second job starts.`) as T;
  }
  return then(estimate(intent === "start_stale"), (estimate) => describeStartIntent({ configured, intent, estimate })) as T;
}

/** What starting a re-embed would do, from its estimate (the confirmation text on both backends). */
export function describeStartIntent({ configured, intent, estimate: e }: { configured: Fingerprint; intent: "start" | "start_stale" | "start_hold"; estimate: ReembedEstimate }): string {
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

/**
 * Start (or resume) a re-embed towards the configured model. New vectors go
 * beside the active ones (own rows, own vec index); the active model keeps
 * serving until every artifact has a new vector, then `finishReembedIfDone`
 * switches in one transaction. The queue is durable, so a crash resumes.
 * With nothing to embed and no model to switch to, no job starts and the
 * answer says why. Audited with who asked, inside the store's write transaction.
 */
export function startReembed({ handle, configured, onlyStale, holdSwitch = false, actor }: { handle: StoreHandle; configured: Fingerprint; onlyStale: boolean; holdSwitch?: boolean; actor: string }): StartReembedResult {
  // Refuse first (e.g. stale-only across a model change), then backfill: texts
  // rendered by an older descriptor version are re-rendered so they get vectors of the current text.
  const { model_changed: modelChanged } = estimateReembed({ handle, configured, onlyStale });
  const target = `store:${handle.store}`;
  handle.sqlite
    .transaction(() => {
      const backfilled = listEmbeddables().reduce((n, e) => n + (e.backfill?.({ handle }) ?? 0), 0);
      if (backfilled > 0) appendAudit({ actor, action: "store.reembed.backfill", target, details: { backfilled } });
    })
    .immediate();
  const existing = readJob({ handle });
  const resume = existing !== null && existing.status !== "done" && existing.target_fingerprint_id === configured.id;
  const items = itemsNeedingVectors({ handle, target: configured.id });
  if (!resume && items.length === 0 && !modelChanged) {
    return { started: false, reason: `every item already has a current vector from ${configured.provider}:${configured.model}` };
  }
  handle.sqlite
    .transaction(() => {
      // A resume takes on what needs a vector now: what the job had already done, plus these items.
      const doneBefore = resume ? existing.total - Math.min(existing.total, ownItemsRemaining({ handle, job: existing })) : 0;
      rememberFingerprint({ handle, fingerprint: configured });
      enqueueEmbeddings({ handle, items });
      const now = Date.now();
      const job: ReembedJob = resume
        ? { ...existing, total: doneBefore + items.length, queued_until: now }
        : { target_fingerprint_id: configured.id, only_stale: onlyStale, hold_switch: holdSwitch, total: items.length, started_at: now, started_by: actor, status: "running", queued_until: now, finished_at: null };
      writeJob({ handle, job });
      appendAudit({ actor, action: resume ? "store.reembed.resume" : "store.reembed.start", target, details: { target: configured.id, onlyStale, toEmbed: items.length } });
    })
    .immediate();
  // A model switch with every new vector already there (or an empty store) finishes at once.
  finishReembedIfDone({ handle, actor });
  return { started: true, job: getReembedProgress({ handle })! };
}

/** The store's re-embed, running or the last one finished; null if there never was one. */
export function getReembedProgress({ handle }: { handle: StoreHandle }): ReembedProgress | null {
  const job = readJob({ handle });
  return job && reembedProgressOf({ job, queued: job.status === "done" ? 0 : ownItemsRemaining({ handle, job }) });
}

/** A job's progress from how many of its own items are still queued (both backends). */
export function reembedProgressOf<J extends ReembedJob>({ job: { queue_id_until: _internal, ...job }, queued }: { job: J & { queue_id_until?: number }; queued: number }): ReembedProgress {
  const remaining = job.status === "done" ? 0 : Math.min(job.total, queued);
  const done = job.total - remaining;
  const elapsed = ((job.finished_at ?? Date.now()) - job.started_at) / 1000;
  const ratePerSec = done > 0 && elapsed > 0 ? done / elapsed : null;
  return { ...job, done, remaining, rate_per_sec: ratePerSec, eta_seconds: ratePerSec && remaining > 0 ? remaining / ratePerSec : null };
}

/**
 * Finish a re-embed whose own items all have their new vector. Same model
 * (stale rows): done. A model switch waits until every artifact has a vector
 * from the target (items ingested meanwhile too: the new model must cover
 * them all), then activates it, drops the other models' vectors and indexes
 * and marks the job done, in one transaction: readers see the old model or
 * the new one, never a mix. A held switch waits for an admin (`force`).
 * Without an actor it is the embed worker finishing the job on its own.
 */
export function finishReembedIfDone({ handle, actor = "system:embed-worker", force = false, gate }: { handle: StoreHandle; actor?: string; force?: boolean; gate?: SwitchGate }): boolean {
  const job = readJob({ handle });
  if (!job || job.status === "done") return false;
  if (ownItemsRemaining({ handle, job }) > 0) return false;
  const { sqlite, db } = handle;
  const target = `store:${handle.store}`;
  const active = readActiveFingerprintId({ handle });
  const finished: ReembedJob = { ...job, status: "done", finished_at: Date.now() };
  if (active === job.target_fingerprint_id) {
    sqlite
      .transaction(() => {
        writeJob({ handle, job: finished });
        appendAudit({ actor, action: "store.reembed.done", target, details: { target: job.target_fingerprint_id, embedded: job.total } });
      })
      .immediate();
    return true;
  }
  if (job.hold_switch && !force) {
    if (job.status !== "waiting_switch") writeJob({ handle, job: { ...job, status: "waiting_switch" } });
    return false;
  }
  const pending = db.select({ n: count() }).from(embedQueue).where(isNull(embedQueue.parkedAt)).get()?.n ?? 0;
  if (pending > 0 || itemsNeedingVectors({ handle, target: job.target_fingerprint_id }).length > 0) return false;
  const others = db
    .selectDistinct({ id: embeddings.fingerprintId })
    .from(embeddings)
    .where(ne(embeddings.fingerprintId, job.target_fingerprint_id))
    .all()
    .map((r) => r.id);
  sqlite
    .transaction(() => {
      setActiveFingerprintId({ handle, fingerprintId: job.target_fingerprint_id });
      db.delete(embeddings).where(ne(embeddings.fingerprintId, job.target_fingerprint_id)).run();
      for (const id of others) sqlite.exec(`drop table if exists ${vecIndexTable(id)}`);
      writeJob({ handle, job: finished });
      appendAudit({ actor, action: "store.reembed.switch", target, details: { active: job.target_fingerprint_id, dropped: others, ...(gate ? { gate: auditedGate(gate) } : {}) } });
    })
    .immediate();
  dropAnnIndexesExcept({ source: { db: sqlite, schema: "main" }, keepFingerprintId: job.target_fingerprint_id });
  return true;
}

/** An admin's switch of a held re-embed, after the self-recall gate; 409 until every artifact has its new vector. */
export function switchHeldReembed({ handle, actor, gate }: { handle: StoreHandle; actor: string; gate?: SwitchGate }): void {
  const job = readJob({ handle });
  if (!job || job.status === "done") throw new AppError("conflict", "no re-embed in progress");
  if (!finishReembedIfDone({ handle, actor, force: true, gate })) {
    throw new AppError("conflict", "the re-embed is not finished yet: every artifact needs its new vector before the switch");
  }
}
