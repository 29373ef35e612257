import type { StoreHandle } from "../db/connection";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { listEmbeddables } from "./embeddables";
import { getActiveFingerprintId, rememberFingerprint, setActiveFingerprintId } from "./model";
import type { Fingerprint } from "./providers";
import { enqueueEmbeddings, type EmbedItem } from "./queue";
import { vecIndexTable } from "./vector-index";

export type ReembedJob = {
  targetFingerprintId: string;
  onlyStale: boolean;
  /** Build the new vectors but wait for an admin to switch (after comparing). */
  holdSwitch: boolean;
  total: number;
  startedAt: number;
  startedBy: string;
};

export type ReembedProgress = ReembedJob & { done: number; remaining: number; ratePerSec: number | null; etaSeconds: number | null };

function readJob(handle: StoreHandle): ReembedJob | null {
  const row = handle.sqlite.prepare("select value from meta where key = 'reembed_job'").get() as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as ReembedJob) : null;
}

/** Artifacts that still need a vector from `target` for their current text. */
function itemsNeedingVectors(handle: StoreHandle, target: string): EmbedItem[] {
  const { sqlite } = handle;
  const has = sqlite.prepare("select input_hash as h from embeddings where kind = ? and ref_id = ? and fingerprint_id = ?");
  const items: EmbedItem[] = [];
  for (const e of listEmbeddables()) {
    let all: { refId: number; inputHash: string }[];
    try {
      all = [...e.listAll(sqlite)];
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

export type ReembedEstimate = { toEmbed: number; targetFingerprintId: string; modelChanged: boolean; estimatedSeconds: number | null };

/** What a re-embed would do, before starting it. `ratePerSec` comes from measured worker throughput when known. */
export function estimateReembed(handle: StoreHandle, configured: Fingerprint, opts: { onlyStale: boolean; ratePerSec?: number }): ReembedEstimate {
  const active = getActiveFingerprintId(handle, configured);
  const modelChanged = active !== configured.id;
  if (opts.onlyStale && modelChanged) {
    throw new AppError("conflict", "the configured model differs from the store's active model: only a full re-embed can switch models");
  }
  const toEmbed = itemsNeedingVectors(handle, configured.id).length;
  return { toEmbed, targetFingerprintId: configured.id, modelChanged, estimatedSeconds: opts.ratePerSec ? toEmbed / opts.ratePerSec : null };
}

/**
 * Start (or resume) a re-embed towards the configured model. New vectors go
 * beside the active ones (own rows, own vec index); the active model keeps
 * serving until every artifact has a new vector, then `finishReembedIfDone`
 * switches in one transaction. The queue is durable, so a crash resumes.
 */
export function startReembed(handle: StoreHandle, configured: Fingerprint, opts: { onlyStale: boolean; holdSwitch?: boolean; actor: string }): ReembedProgress {
  // Refuse first (e.g. stale-only across a model change), then backfill: texts
  // rendered by an older descriptor version are re-rendered so they get vectors of the current text.
  estimateReembed(handle, configured, { onlyStale: opts.onlyStale });
  const backfilled = handle.sqlite.transaction(() => listEmbeddables().reduce((n, e) => n + (e.backfill?.(handle) ?? 0), 0)).immediate();
  if (backfilled > 0) appendAudit({ actor: opts.actor, action: "store.reembed.backfill", target: `store:${handle.store}`, details: { backfilled } });
  const items = itemsNeedingVectors(handle, configured.id);
  const existing = readJob(handle);
  const job: ReembedJob =
    existing && existing.targetFingerprintId === configured.id
      ? existing
      : { targetFingerprintId: configured.id, onlyStale: opts.onlyStale, holdSwitch: opts.holdSwitch ?? false, total: items.length, startedAt: Date.now(), startedBy: opts.actor };
  handle.sqlite.transaction(() => {
    rememberFingerprint(handle, configured);
    enqueueEmbeddings(handle, items);
    handle.sqlite.prepare("insert into meta(key, value) values ('reembed_job', ?) on conflict(key) do update set value = excluded.value").run(JSON.stringify(job));
  }).immediate();
  appendAudit({ actor: opts.actor, action: existing ? "store.reembed.resume" : "store.reembed.start", target: `store:${handle.store}`, details: { target: configured.id, onlyStale: opts.onlyStale, toEmbed: items.length } });
  return getReembedProgress(handle)!;
}

export function getReembedProgress(handle: StoreHandle): ReembedProgress | null {
  const job = readJob(handle);
  if (!job) return null;
  const remaining = itemsNeedingVectors(handle, job.targetFingerprintId).length;
  const total = Math.max(job.total, remaining);
  const done = total - remaining;
  const elapsed = (Date.now() - job.startedAt) / 1000;
  const ratePerSec = done > 0 && elapsed > 0 ? done / elapsed : null;
  return { ...job, total, done, remaining, ratePerSec, etaSeconds: ratePerSec ? remaining / ratePerSec : null };
}

/**
 * Switch to the target model once every artifact has a fresh vector from it:
 * activate, drop the other models' vectors and indexes, clear the job. One
 * transaction: readers see the old model or the new one, never a mix.
 */
export function finishReembedIfDone(handle: StoreHandle, opts: { actor?: string; force?: boolean } = {}): boolean {
  const job = readJob(handle);
  if (!job || (job.holdSwitch && !opts.force)) return false;
  const pending = (handle.sqlite.prepare("select count(*) as n from embed_queue where parked_at is null").get() as { n: number }).n;
  if (pending > 0 || itemsNeedingVectors(handle, job.targetFingerprintId).length > 0) return false;
  const { sqlite } = handle;
  const others = (sqlite.prepare("select distinct fingerprint_id as id from embeddings where fingerprint_id != ?").all(job.targetFingerprintId) as { id: string }[]).map((r) => r.id);
  sqlite.transaction(() => {
    setActiveFingerprintId(handle, job.targetFingerprintId);
    sqlite.prepare("delete from embeddings where fingerprint_id != ?").run(job.targetFingerprintId);
    for (const id of others) sqlite.exec(`drop table if exists ${vecIndexTable(id)}`);
    sqlite.prepare("delete from meta where key = 'reembed_job'").run();
  }).immediate();
  appendAudit({ actor: opts.actor ?? "system:embed-worker", action: "store.reembed.switch", target: `store:${handle.store}`, details: { active: job.targetFingerprintId, dropped: others } });
  return true;
}

/** An admin's switch of a held re-embed; 409 until every artifact has its new vector. */
export function switchHeldReembed(handle: StoreHandle, { actor }: { actor: string }): void {
  const job = readJob(handle);
  if (!job) throw new AppError("conflict", "no re-embed in progress");
  if (!finishReembedIfDone(handle, { actor, force: true })) {
    throw new AppError("conflict", "the re-embed is not finished yet: every artifact needs its new vector before the switch");
  }
}
