import { getConfig } from "../config";
import type { StoreHandle } from "../db/connection";
import { computeDrift, type DriftReport } from "./drift";
import { getEmbedder, getFingerprintInfo, readActiveFingerprintId } from "./model";
import type { Fingerprint } from "./providers";
import { getEmbedBacklog, listParkedEmbeddings, type Backlog, type ParkedEmbedding } from "./queue";
import { getReembedProgress, type ReembedProgress } from "./reembed";

export type VectorReadiness =
  | { usable: true; fingerprint: Fingerprint }
  | { usable: false; reason: "degraded" | "drifted" | "vectors_index_unavailable" | "provider_error"; message: string };

export type EmbeddingStatus = {
  store: string;
  configured: Fingerprint | null;
  providerError: string | null;
  active: Fingerprint | null;
  backlog: Backlog & { oldestAgeSeconds: number | null; watermark: number };
  degraded: boolean;
  degradedReason: string | null;
  drift: DriftReport | null;
  vectorIndex: { available: boolean; reason: string | null };
  reembed: ReembedProgress | null;
  parked: ParkedEmbedding[];
};

/** Everything the health card and `GET /stores/{store}/health` say about a store's vectors. */
export async function getEmbeddingStatus({ handle }: { handle: StoreHandle }): Promise<EmbeddingStatus> {
  const watermark = getConfig().embed.backlogWatermark;
  const backlog = getEmbedBacklog({ handle });
  let configured: Fingerprint | null = null;
  let providerError: string | null = null;
  try {
    configured = await getEmbedder().fingerprint;
  } catch (e) {
    providerError = (e as Error).message;
  }
  const drift = configured ? computeDrift({ handle, configured }) : null;
  const degraded = backlog.pending > watermark;
  return {
    store: handle.store,
    configured,
    providerError,
    active: drift ? getFingerprintInfo({ handle, fingerprintId: drift.activeFingerprintId }) : null,
    backlog: { ...backlog, oldestAgeSeconds: backlog.oldestEnqueuedAt ? Math.round((Date.now() - backlog.oldestEnqueuedAt) / 1000) : null, watermark },
    degraded,
    degradedReason: degraded ? `embed backlog ${backlog.pending} is above the watermark ${watermark}: vector and hybrid search answer lexically until it drains` : null,
    drift,
    vectorIndex: handle.vectors.available ? { available: true, reason: null } : { available: false, reason: handle.vectors.reason },
    reembed: getReembedProgress({ handle }),
    parked: listParkedEmbeddings({ handle, limit: 20 }),
  };
}

/**
 * Can vector search answer for this store right now, and with which model?
 * Never silent: every "no" carries the reason the response must report.
 */
export async function checkVectorReadiness({ handle }: { handle: StoreHandle }): Promise<VectorReadiness> {
  let configured: Fingerprint;
  try {
    configured = await getEmbedder().fingerprint;
  } catch (e) {
    return { usable: false, reason: "provider_error", message: `embedding provider unavailable: ${(e as Error).message}` };
  }
  const backlog = getEmbedBacklog({ handle });
  const watermark = getConfig().embed.backlogWatermark;
  if (backlog.pending > watermark) {
    return { usable: false, reason: "degraded", message: `embed backlog ${backlog.pending} is above the watermark ${watermark}` };
  }
  const activeId = readActiveFingerprintId({ handle });
  if (activeId && activeId !== configured.id) {
    return { usable: false, reason: "drifted", message: `the configured model (${configured.model}, ${configured.id}) differs from the store's vectors (${activeId}); re-embed the store` };
  }
  return { usable: true, fingerprint: configured };
}
