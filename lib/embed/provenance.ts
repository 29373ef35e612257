import { sql } from "drizzle-orm";
import { pushTo } from "../collections";
import { dialect, readLedger, sqlRows, sqlRun, writeLedger, type LedgerHandle, type Op } from "../db/port";
import { recordProvenanceBatch } from "../governance/ledger";
import { log } from "../log";
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
    recordProvenanceBatch({ input: { records: records.slice(i, i + PROVENANCE_BATCH) }, recordedBy: EMBED_WORKER });
  }
}

/** The recorder of the vectors' facts. */
export const EMBED_WORKER = "system:embed-worker";

/** Facts looked at per page of a sweep (one ledger read, one store read, at most one ledger delete). */
const SWEEP_PAGE = 1000;
/** A store with no embedding work is swept at most this often, so a deleted document's facts go too. */
const IDLE_SWEEP_MS = 60_000;

type VectorFact = { id: number; artifactType: string; artifactId: string; fingerprint: string | null; inputHash: string };
type Cursor = { type: string; id: string; rowId: number };
const START: Cursor = { type: "", id: "", rowId: 0 };

/** Where each store's sweep goes on from, and when a store without work was last swept (per process). */
const g = globalThis as unknown as { __dualmindVectorFactSweep?: Map<string, { cursor: Cursor; at: number }> };
const sweeps = () => (g.__dualmindVectorFactSweep ??= new Map());

/** One page of a store's vector facts after `after`, in the unique key's order (both engines). */
function* vectorFactsPage({ store, after, limit }: { store: string; after: Cursor; limit: number }): Op<VectorFact[]> {
  const rows = yield* sqlRows<{ id: unknown; artifact_type: string; artifact_id: string; fingerprint: string | null; input_hash: string }>(
    sql`select id, artifact_type, artifact_id, fingerprint, input_hash from provenance
      where store = ${store} and recorded_by = ${EMBED_WORKER} and (artifact_type, artifact_id, id) > (${after.type}, ${after.id}, ${after.rowId})
      order by artifact_type, artifact_id, id limit ${limit}`,
  );
  return rows.map((r) => ({ id: Number(r.id), artifactType: r.artifact_type, artifactId: r.artifact_id, fingerprint: r.fingerprint, inputHash: r.input_hash }));
}

function* deleteFacts(ids: number[]): Op<void> {
  yield* sqlRun(sql`delete from provenance where recorded_by = ${EMBED_WORKER} and id in ${ids}`);
}

const vectorKey = (kind: string, refId: number, fingerprint: string | null, inputHash: string) => JSON.stringify([kind, refId, fingerprint, inputHash]);
const itemKey = (kind: string, refId: number) => JSON.stringify([kind, refId]);

/**
 * The store's side: which of these artifacts have a vector (by model and
 * input) and which wait in the embed queue. On PostgreSQL chunks keep their
 * vectors in chunk_embeddings, every other kind (and every kind on SQLite) in embeddings.
 */
function* liveVectors({ refs, pgChunkKind }: { refs: Map<string, number[]>; pgChunkKind: string }): Op<{ vectors: Set<string>; queued: Set<string> }> {
  const engine = yield* dialect();
  const vectors = new Set<string>();
  const queued = new Set<string>();
  for (const [kind, refIds] of refs) {
    const held = yield* sqlRows<{ ref_id: unknown; fingerprint_id: string; input_hash: string }>(
      engine === "pg" && kind === pgChunkKind
        ? sql`select chunk_row_id as ref_id, fingerprint_id, input_hash from chunk_embeddings where chunk_row_id in ${refIds}`
        : sql`select ref_id, fingerprint_id, input_hash from embeddings where kind = ${kind} and ref_id in ${refIds}`,
    );
    for (const v of held) vectors.add(vectorKey(kind, Number(v.ref_id), v.fingerprint_id, v.input_hash));
    for (const q of yield* sqlRows<{ ref_id: unknown }>(sql`select ref_id from embed_queue where kind = ${kind} and ref_id in ${refIds}`)) queued.add(itemKey(kind, Number(q.ref_id)));
  }
  return { vectors, queued };
}

/**
 * Retire the embed worker's facts of vectors the store no longer holds (a
 * rewritten or deleted document's chunks, a vector re-made from new text or
 * by another model), a page at a time from where the last sweep stopped, at
 * most `budget` facts a call: a rewrite does not grow the ledger. A fact
 * whose artifact still waits in the queue is kept (on SQLite the fact is
 * written before its vector commits); an artifact type no kind embeds is never touched.
 */
export async function retireReplacedVectorFacts({
  store,
  ledger,
  readStore,
  kindOf,
  pgChunkKind,
  budget,
}: {
  store: string;
  ledger: LedgerHandle;
  /** Run a store read (SQLite's handle, or the caller's PostgreSQL transaction on the store). */
  readStore: <T>(op: Op<T>) => T | Promise<T>;
  /** The embeddable kind whose vectors a fact's artifact type names (`chunk_vector` → chunk). */
  kindOf: (artifactType: string) => string | undefined;
  pgChunkKind: string;
  budget: number;
}): Promise<{ checked: number; retired: number }> {
  const state = sweeps().get(store) ?? { cursor: START, at: 0 };
  let checked = 0;
  let retired = 0;
  while (checked < budget) {
    const limit = Math.min(SWEEP_PAGE, budget - checked);
    const page = await readLedger(ledger, vectorFactsPage({ store, after: state.cursor, limit }));
    checked += page.length;
    const refs = new Map<string, number[]>();
    for (const f of page) {
      const kind = kindOf(f.artifactType);
      if (kind !== undefined && /^\d+$/.test(f.artifactId)) pushTo(refs, kind, Number(f.artifactId));
    }
    const live = refs.size ? await readStore(liveVectors({ refs, pgChunkKind })) : { vectors: new Set<string>(), queued: new Set<string>() };
    const stale = page.filter((f) => {
      const kind = kindOf(f.artifactType);
      if (kind === undefined || !/^\d+$/.test(f.artifactId)) return false;
      const refId = Number(f.artifactId);
      return !live.vectors.has(vectorKey(kind, refId, f.fingerprint, f.inputHash)) && !live.queued.has(itemKey(kind, refId));
    });
    if (stale.length) await writeLedger(ledger, deleteFacts(stale.map((f) => f.id)));
    retired += stale.length;
    const last = page.at(-1);
    if (page.length < limit || !last) {
      state.cursor = START;
      break;
    }
    state.cursor = { type: last.artifactType, id: last.artifactId, rowId: last.id };
  }
  sweeps().set(store, { ...state, at: Date.now() });
  return { checked, retired };
}

/**
 * After a worker's batch on a store: sweep (`sweep`, given its budget) as
 * many facts as twice the vectors the batch wrote or dropped, at least a
 * page, so retiring outpaces what rewrites add; a store without work at most
 * once a minute. A failed sweep is logged and tried again after the next batch; the batch stands.
 */
export async function sweepVectorFactsAfterBatch({ store, touched, sweep }: { store: string; touched: number; sweep: (budget: number) => Promise<unknown> }): Promise<void> {
  if (touched === 0 && Date.now() - (sweeps().get(store)?.at ?? 0) < IDLE_SWEEP_MS) return;
  try {
    await sweep(Math.max(SWEEP_PAGE, 2 * touched));
  } catch (e) {
    log("warn", "could not retire the provenance of replaced vectors; tried again after the next batch", { store, error: (e as Error).message });
  }
}

/** The kind whose vectors an artifact type names, among the registered kinds (`chunk_vector` → chunk). */
export function vectorKindOf(kinds: { kind: string; artifactType: string }[]): (artifactType: string) => string | undefined {
  const byType = new Map(kinds.map((k) => [`${k.artifactType}_vector`, k.kind]));
  return (artifactType) => byType.get(artifactType);
}
