import { count, eq, isNull, ne } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { embeddings, embedQueue } from "../db/schema/embed";
import { meta } from "../db/schema/index";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import type { InputHashRow } from "./drift";
import { listEmbeddables, type EmbeddableRef } from "./embeddables";
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

function readJob({ handle }: { handle: StoreHandle }): ReembedJob | null {
  const row = handle.db.select({ value: meta.value }).from(meta).where(eq(meta.key, "reembed_job")).get();
  return row ? (JSON.parse(row.value) as ReembedJob) : null;
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
      const row = has.get(e.kind, a.refId, target) as InputHashRow | undefined;
      if (!row || row.h !== a.inputHash) items.push({ kind: e.kind, refId: a.refId, inputHash: a.inputHash });
    }
  }
  return items;
}

export type ReembedEstimate = { toEmbed: number; targetFingerprintId: string; modelChanged: boolean; estimatedSeconds: number | null };

/** What a re-embed would do, before starting it. `ratePerSec` comes from measured worker throughput when known. */
export function estimateReembed({ handle, configured, onlyStale, ratePerSec }: { handle: StoreHandle; configured: Fingerprint; onlyStale: boolean; ratePerSec?: number }): ReembedEstimate {
  const active = getActiveFingerprintId({ handle, configured });
  const modelChanged = active !== configured.id;
  if (onlyStale && modelChanged) {
    throw new AppError("conflict", "the configured model differs from the store's active model: only a full re-embed can switch models");
  }
  const toEmbed = itemsNeedingVectors({ handle, target: configured.id }).length;
  return { toEmbed, targetFingerprintId: configured.id, modelChanged, estimatedSeconds: ratePerSec ? toEmbed / ratePerSec : null };
}

/**
 * Start (or resume) a re-embed towards the configured model. New vectors go
 * beside the active ones (own rows, own vec index); the active model keeps
 * serving until every artifact has a new vector, then `finishReembedIfDone`
 * switches in one transaction. The queue is durable, so a crash resumes.
 * Audited with who asked, inside the store's write transaction.
 */
export function startReembed({ handle, configured, onlyStale, holdSwitch = false, actor }: { handle: StoreHandle; configured: Fingerprint; onlyStale: boolean; holdSwitch?: boolean; actor: string }): ReembedProgress {
  // Refuse first (e.g. stale-only across a model change), then backfill: texts
  // rendered by an older descriptor version are re-rendered so they get vectors of the current text.
  estimateReembed({ handle, configured, onlyStale });
  const target = `store:${handle.store}`;
  handle.sqlite
    .transaction(() => {
      const backfilled = listEmbeddables().reduce((n, e) => n + (e.backfill?.({ handle }) ?? 0), 0);
      if (backfilled > 0) appendAudit({ actor, action: "store.reembed.backfill", target, details: { backfilled } });
    })
    .immediate();
  const items = itemsNeedingVectors({ handle, target: configured.id });
  const existing = readJob({ handle });
  const job: ReembedJob =
    existing && existing.targetFingerprintId === configured.id
      ? existing
      : { targetFingerprintId: configured.id, onlyStale, holdSwitch, total: items.length, startedAt: Date.now(), startedBy: actor };
  handle.sqlite
    .transaction(() => {
      rememberFingerprint({ handle, fingerprint: configured });
      enqueueEmbeddings({ handle, items });
      handle.db.insert(meta).values({ key: "reembed_job", value: JSON.stringify(job) }).onConflictDoUpdate({ target: meta.key, set: { value: JSON.stringify(job) } }).run();
      appendAudit({ actor, action: existing ? "store.reembed.resume" : "store.reembed.start", target, details: { target: configured.id, onlyStale, toEmbed: items.length } });
    })
    .immediate();
  return getReembedProgress({ handle })!;
}

export function getReembedProgress({ handle }: { handle: StoreHandle }): ReembedProgress | null {
  const job = readJob({ handle });
  if (!job) return null;
  const remaining = itemsNeedingVectors({ handle, target: job.targetFingerprintId }).length;
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
 * Without an actor it is the embed worker finishing the job on its own.
 */
export function finishReembedIfDone({ handle, actor = "system:embed-worker", force = false }: { handle: StoreHandle; actor?: string; force?: boolean }): boolean {
  const job = readJob({ handle });
  if (!job || (job.holdSwitch && !force)) return false;
  const pending = handle.db.select({ n: count() }).from(embedQueue).where(isNull(embedQueue.parkedAt)).get()?.n ?? 0;
  if (pending > 0 || itemsNeedingVectors({ handle, target: job.targetFingerprintId }).length > 0) return false;
  const { sqlite, db } = handle;
  const others = db
    .selectDistinct({ id: embeddings.fingerprintId })
    .from(embeddings)
    .where(ne(embeddings.fingerprintId, job.targetFingerprintId))
    .all()
    .map((r) => r.id);
  sqlite
    .transaction(() => {
      setActiveFingerprintId({ handle, fingerprintId: job.targetFingerprintId });
      db.delete(embeddings).where(ne(embeddings.fingerprintId, job.targetFingerprintId)).run();
      for (const id of others) sqlite.exec(`drop table if exists ${vecIndexTable(id)}`);
      db.delete(meta).where(eq(meta.key, "reembed_job")).run();
      appendAudit({ actor, action: "store.reembed.switch", target: `store:${handle.store}`, details: { active: job.targetFingerprintId, dropped: others } });
    })
    .immediate();
  return true;
}

/** An admin's switch of a held re-embed; 409 until every artifact has its new vector. */
export function switchHeldReembed({ handle, actor }: { handle: StoreHandle; actor: string }): void {
  const job = readJob({ handle });
  if (!job) throw new AppError("conflict", "no re-embed in progress");
  if (!finishReembedIfDone({ handle, actor, force: true })) {
    throw new AppError("conflict", "the re-embed is not finished yet: every artifact needs its new vector before the switch");
  }
}
