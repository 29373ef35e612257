import { recordProvenanceBatch } from "../governance/ledger";
import type { Fingerprint } from "./providers";

export type EmbeddedArtifact = { store: string; artifactType: string; refId: number; inputHash: string; chunkingVersion: number | null };

/** Provenance records per batch (the ledger's batch limit). */
export const PROVENANCE_BATCH = 1000;

/** The provenance facts of vectors made by `fp` (one per artifact), as the ledger's batch input takes them. */
export function embeddingProvenanceRecords({ fingerprint: fp, artifacts }: { fingerprint: Fingerprint; artifacts: EmbeddedArtifact[] }) {
  return artifacts.map((a) => ({
    artifact_type: `${a.artifactType}_vector`,
    artifact_id: String(a.refId),
    store: a.store,
    model_name: `${fp.provider}:${fp.model}`.slice(0, 200),
    model_version: fp.probe_hash.slice(0, 16),
    fingerprint: fp.id,
    chunking_version: a.chunkingVersion === null ? undefined : String(a.chunkingVersion),
    input_hash: a.inputHash,
  }));
}

/**
 * One provenance row per vector in governance.db: which model (name, probe
 * hash, fingerprint) made it from which input. Written *before* the vectors
 * commit: the key dedupes, so a crash in between only means the retry's
 * insert is a no-op, and no vector ever lacks its row.
 */
export function recordEmbeddingProvenance({ fingerprint, artifacts }: { fingerprint: Fingerprint; artifacts: EmbeddedArtifact[] }): void {
  const records = embeddingProvenanceRecords({ fingerprint, artifacts });
  for (let i = 0; i < records.length; i += PROVENANCE_BATCH) {
    recordProvenanceBatch({ input: { records: records.slice(i, i + PROVENANCE_BATCH) }, recordedBy: "system:embed-worker" });
  }
}
