import { recordProvenanceBatch } from "../governance/ledger";
import type { Fingerprint } from "./providers";

export type EmbeddedArtifact = { store: string; artifactType: string; refId: number; inputHash: string; chunkingVersion: number | null };

/**
 * One provenance row per vector in governance.db: which model (name, probe
 * hash, fingerprint) made it from which input. Written *before* the vectors
 * commit: the key dedupes, so a crash in between only means the retry's
 * insert is a no-op, and no vector ever lacks its row.
 */
export function recordEmbeddingProvenance({ fingerprint: fp, artifacts }: { fingerprint: Fingerprint; artifacts: EmbeddedArtifact[] }): void {
  for (let i = 0; i < artifacts.length; i += 1000) {
    recordProvenanceBatch({
      input: {
        records: artifacts.slice(i, i + 1000).map((a) => ({
          artifact_type: `${a.artifactType}_vector`,
          artifact_id: String(a.refId),
          store: a.store,
          model_name: `${fp.provider}:${fp.model}`.slice(0, 200),
          model_version: fp.probeHash.slice(0, 16),
          fingerprint: fp.id,
          chunking_version: a.chunkingVersion === null ? undefined : String(a.chunkingVersion),
          input_hash: a.inputHash,
        })),
      },
      recordedBy: "system:embed-worker",
    });
  }
}
