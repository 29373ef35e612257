import { count, ne } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { embeddings } from "../db/schema/embed";
import { listEmbeddables } from "./embeddables";
import { getActiveFingerprintId } from "./model";
import type { Fingerprint } from "./providers";

export type DriftReport = {
  activeFingerprintId: string;
  configuredFingerprintId: string;
  /** The configured model is not the one whose vectors serve this store. */
  modelChanged: boolean;
  artifacts: number;
  /** Artifacts with a vector from the active model for their current text. */
  fresh: number;
  /** Vector exists but was made from older text. */
  stale: number;
  /** No vector from the active model yet (queued, parked, or never queued). */
  missing: number;
  /** Vectors from other models still on disk (excluded from search). */
  otherModelVectors: number;
  /** Rows that cannot serve a query with the configured model: stale, plus everything when the model changed. */
  drifted: number;
  driftPct: number;
  coveragePct: number;
  byKind: Record<string, { artifacts: number; fresh: number; stale: number; missing: number }>;
};

/** An artifact's vector, by the hash of the text it was made from. */
export type InputHashRow = { h: string };

/** Compare every live artifact with its vectors. Read-only. */
export function computeDrift({ handle, configured }: { handle: StoreHandle; configured: Fingerprint }): DriftReport {
  const { sqlite } = handle;
  const active = getActiveFingerprintId({ handle, configured });
  const vectorHash = sqlite.prepare("select input_hash as h from embeddings where kind = ? and ref_id = ? and fingerprint_id = ?");
  const byKind: DriftReport["byKind"] = {};
  let artifacts = 0;
  let fresh = 0;
  let stale = 0;
  for (const e of listEmbeddables()) {
    const k = { artifacts: 0, fresh: 0, stale: 0, missing: 0 };
    let all: { refId: number; inputHash: string }[];
    try {
      all = [...e.listAll({ handle })];
    } catch {
      continue; // this store has no table for the kind (yet)
    }
    for (const a of all) {
      k.artifacts++;
      const row = vectorHash.get(e.kind, a.refId, active) as InputHashRow | undefined;
      if (!row) k.missing++;
      else if (row.h === a.inputHash) k.fresh++;
      else k.stale++;
    }
    if (k.artifacts > 0) byKind[e.kind] = k;
    artifacts += k.artifacts;
    fresh += k.fresh;
    stale += k.stale;
  }
  const otherModelVectors = handle.db.select({ n: count() }).from(embeddings).where(ne(embeddings.fingerprintId, active)).get()?.n ?? 0;
  const modelChanged = active !== configured.id;
  const drifted = modelChanged ? artifacts : stale;
  return {
    activeFingerprintId: active,
    configuredFingerprintId: configured.id,
    modelChanged,
    artifacts,
    fresh,
    stale,
    missing: artifacts - fresh - stale,
    otherModelVectors,
    drifted,
    driftPct: artifacts ? (100 * drifted) / artifacts : 0,
    coveragePct: artifacts ? (100 * fresh) / artifacts : 100,
    byKind,
  };
}
