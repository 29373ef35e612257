import { engineStep, type Op } from "../db/port";
import { forgetEmbeddings } from "../embed/vector-index";
import { auditStep } from "../governance/audit";
import { forgetKindEmbeddingsPg } from "./vectors-pg";

/**
 * The port steps (lib/db/port.ts) every store repository shares that differ
 * per engine, both halves side by side: the audit ledger (governance.db
 * beside the store on SQLite; the same transaction on PostgreSQL, so the row
 * commits with the change) and the embedding queue and vectors (vec0/usearch
 * on SQLite, pgvector on PostgreSQL).
 */

/** An audit row for a change to the store (an agent's refused while the ledger is full: lib/governance/limits.ts). */
export const audit = auditStep;

/** Drop the vectors of deleted artifacts of one kind. */
export function forgetVectors({ kind, refIds }: { kind: string; refIds: number[] }): Op<void> {
  return engineStep({
    sqlite: (handle) => forgetEmbeddings({ handle, items: refIds.map((refId) => ({ kind, refId })) }),
    pg: (tx) => forgetKindEmbeddingsPg({ tx, kind, refIds }),
  });
}
