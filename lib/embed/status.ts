import { getConfig } from "../config";
import type { StoreHandle } from "../db/connection";
import { readLiveCounts, readOldestPendingAt, type KindCounts, type LiveCounts } from "./counters";
import { getEmbedder, getFingerprintInfo, readActiveFingerprintId } from "./model";
import { isProviderDownError, probeProviderIfDown, providerErrorKind, readProviderHealth, recordProviderOutcome, type ProviderHealth } from "./provider-state";
import type { Fingerprint } from "./providers";
import { diskHold, staleClaimsOf, type StaleClaims } from "./healing";
import { listParkedEmbeddings, readClaimOwners, type Backlog, type ParkedEmbedding } from "./queue";
import { getReembedProgress, type ReembedProgress } from "./reembed";

/**
 * The one store status. Every surface — Overview, Health (all
 * stores and one), the store page, CLI `health` / `metrics status`, REST
 * `GET /stores/{store}/health`, MCP `store_health` and the Prometheus gauges —
 * calls getStoreStatus, so they cannot disagree. It reads live counters kept
 * by triggers (lib/embed/counters.ts) and the provider state every process
 * records (lib/embed/provider-state.ts): no scan per request.
 *
 * Precedence, worst first (the first that applies is the verdict):
 *   1. provider_down        the embedding provider cannot answer: nothing is embedded, queries answer lexically
 *   2. degraded             the backlog is above the watermark: vector and hybrid search answer lexically
 *   3. stalled              the queue is not moving for a reason that is not the items': the disk is full (the
 *                           worker holds the queue and retries by itself), or items are claimed by a worker
 *                           process that is gone (released when a worker on that host starts or beats)
 *   4. drifted              the store's vectors are from another model, or rows lack a current vector (stale or
 *                           missing) with nothing queued for them: stale + missing > pending + parked. Rows with
 *                           work queued are backlog the worker is fixing, not drift.
 *   5. parked               items failed repeatedly and wait for an admin's retry (their rows have no vector)
 *   6. vectors_unavailable  sqlite-vec is not loaded: vector search still answers, by an exact (slower) scan
 *   7. reembedding          an admin's re-embed is running or built and waiting for its switch: planned work, not
 *                           a fault. Its long queue and its model change are what it is for, so while it runs they
 *                           are not also "degraded" or "drifted" (one alert when it starts, one when it ends); a
 *                           real fault meanwhile (provider down, a stalled queue, parked items, no sqlite-vec)
 *                           still shows as itself.
 *   8. healthy
 */
export const STORE_STATUS_PRECEDENCE = ["provider_down", "degraded", "stalled", "drifted", "parked", "vectors_unavailable", "reembedding", "healthy"] as const;
export type StoreStatusState = (typeof STORE_STATUS_PRECEDENCE)[number];
export type StatusAction = { label: string; href: string };
export type StatusVerdict = { state: StoreStatusState; reason: string; action: StatusAction | null };

export type StatusInput = {
  store: string;
  pending: number;
  parked: number;
  watermark: number;
  modelChanged: boolean;
  stale: number;
  missing: number;
  artifacts: number;
  provider: { ok: boolean; error: string | null };
  vectors: { available: boolean; reason: string | null };
  /** Why the queue is not moving, when that is not the items' fault. */
  queue?: QueueState;
  /** An admin's re-embed in progress (running, or built and waiting for its switch); null when none is. */
  reembed?: ReembedState | null;
};

/** A re-embed in progress as the status counts it: its own items done of its total, and whether it waits for an admin's switch. */
export type ReembedState = { done: number; total: number; waitingSwitch: boolean };

/** The re-embed in progress from a store's job record (either backend); null when there is none or it is done. */
export function reembedStateOf(p: ReembedProgress | null): ReembedState | null {
  if (!p || p.status === "done") return null;
  return { done: p.done, total: p.total, waitingSwitch: reembedSwitchReady(p) };
}

/** Whether a held re-embed may be switched now: every one of its items has its new vector (never at 0% done). */
export function reembedSwitchReady(p: Pick<ReembedProgress, "status" | "hold_switch" | "remaining"> | null): boolean {
  if (!p || p.status === "done" || !p.hold_switch) return false;
  return p.status === "waiting_switch" || p.remaining === 0;
}

export type QueueState = { held: string | null; staleClaims: StaleClaims | null };

/** The queue's state as this process knows it: a disk hold of its worker, and claims of dead workers (read by each backend). */
export function queueStateOf(staleClaims: StaleClaims | null): QueueState {
  return { held: diskHold()?.error ?? null, staleClaims };
}

const plural = (n: number, one: string, many: string) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** The verdict from live numbers, by STORE_STATUS_PRECEDENCE. Pure: tests/status-precedence.test.ts checks the order. */
export function deriveStoreStatus(s: StatusInput): StatusVerdict {
  const store = encodeURIComponent(s.store);
  const workerCard = { label: "Check the embed worker and provider", href: `/health?store=${store}#worker-heading` };
  if (!s.provider.ok) {
    return { state: "provider_down", reason: `the embedding provider is not answering (${s.provider.error ?? "unknown error"}): nothing is embedded and queries answer lexically`, action: workerCard };
  }
  if (s.reembed) {
    // A re-embed's own queue and model change are set aside (see the precedence above): only a real fault shows instead.
    const fault = deriveStoreStatus({ ...s, reembed: null, pending: 0, modelChanged: false, stale: 0, missing: 0 });
    return fault.state === "healthy" ? reembedVerdict(store, s.reembed) : fault;
  }
  if (s.pending > s.watermark) {
    return {
      state: "degraded",
      reason: `embed backlog ${s.pending.toLocaleString("en-US")} is above the watermark ${s.watermark.toLocaleString("en-US")}: vector and hybrid search answer lexically until it drains`,
      action: workerCard,
    };
  }
  if (s.queue?.held) {
    return { state: "stalled", reason: `the embed queue is held (${s.queue.held}): no item is charged for it and the worker tries again by itself once writes succeed`, action: workerCard };
  }
  if (s.queue?.staleClaims) {
    const c = s.queue.staleClaims;
    return {
      state: "stalled",
      reason: `${plural(c.items, "item is", "items are")} claimed by an embed worker that is no longer running (${c.owners.join(", ")}): a worker on that host releases ${c.items === 1 ? "it" : "them"} when it starts or beats, otherwise the claim's lease has to run out`,
      action: workerCard,
    };
  }
  const reembed = { label: "Re-embed the store", href: `/stores/${store}#embeddings-heading` };
  if (s.modelChanged && s.artifacts > 0) {
    return { state: "drifted", reason: `the configured model differs from the one whose vectors serve this store: ${plural(s.artifacts, "row is", "rows are")} left out of vector search until a re-embed`, action: reembed };
  }
  // A lower bound: queued items may also belong to rows that are current, never the other way round.
  const unqueued = s.stale + s.missing - s.pending - s.parked;
  if (unqueued > 0) {
    return { state: "drifted", reason: `at least ${plural(unqueued, "row has", "rows have")} no vector of its current text and nothing queued to make one (${s.stale.toLocaleString("en-US")} stale, ${s.missing.toLocaleString("en-US")} missing)`, action: reembed };
  }
  if (s.parked > 0) {
    return { state: "parked", reason: `${plural(s.parked, "item is", "items are")} parked after repeated embedding failures and ${s.parked === 1 ? "has" : "have"} no vector`, action: { label: `Retry ${plural(s.parked, "parked item", "parked items")}`, href: `/stores/${store}#embeddings-heading` } };
  }
  if (!s.vectors.available) {
    return { state: "vectors_unavailable", reason: `the sqlite-vec index is not available (${s.vectors.reason ?? "unknown"}): vector search scans every vector exactly (slower)`, action: { label: "See the store's vector status", href: `/stores/${store}#embeddings-heading` } };
  }
  if (s.pending > 0) {
    return { state: "healthy", reason: `${plural(s.pending, "item is", "items are")} queued for the worker, under the watermark ${s.watermark.toLocaleString("en-US")}; rows without a vector yet answer lexically`, action: null };
  }
  return { state: "healthy", reason: s.artifacts > 0 ? `every row has a vector of its current text` : "nothing to embed yet", action: null };
}

/** The backlog is above the watermark, and not because of a planned re-embed (whose queue is expected to be long). */
export function isDegraded(s: Pick<StoreStatus, "backlog" | "reembed">): boolean {
  return s.backlog.pending > s.backlog.watermark && s.reembed === null;
}

/** "re-embedding (n of m)": what the re-embed has done, and what waits for an admin. */
function reembedVerdict(store: string, r: ReembedState): StatusVerdict {
  const progress = `re-embedding (${r.done.toLocaleString("en-US")} of ${r.total.toLocaleString("en-US")})`;
  const action = { label: r.waitingSwitch ? "Compare and switch to the new model" : "See the re-embed's progress", href: `/stores/${store}#embeddings-heading` };
  return r.waitingSwitch
    ? { state: "reembedding", reason: `${progress}: the new model's vectors are built and wait for an admin to compare and switch; search keeps the current model until then`, action }
    : { state: "reembedding", reason: `${progress}: a planned re-embed is building vectors of the configured model; rows without one yet answer lexically`, action };
}

export type LiveDrift = {
  activeFingerprintId: string | null;
  configuredFingerprintId: string | null;
  modelChanged: boolean;
  artifacts: number;
  fresh: number;
  stale: number;
  missing: number;
  /**
   * Whether the configured model is known (its provider answered its first probe). When it is not, whether the
   * store's vectors are of that model is unknown too: drifted, driftPct and coveragePct are null ("unknown"),
   * never a guessed 0 — on every surface (the API's `drift` is null then).
   */
  known: boolean;
  /** Rows that cannot serve a query with the configured model: stale, plus every row when the model changed. */
  drifted: number | null;
  driftPct: number | null;
  /** Rows with a vector of the configured model for their current text (0 after a model change until a re-embed makes them). */
  coveragePct: number | null;
  byKind: Record<string, { artifacts: number; fresh: number; stale: number; missing: number }>;
};

export type StoreStatus = StatusVerdict & {
  store: string;
  /** When this was computed (it is live: never read from a snapshot). */
  asOf: number;
  backlog: Backlog & { oldest_age_seconds: number | null; watermark: number };
  drift: LiveDrift;
  provider: { ok: boolean; error: string | null; checkedAt: number | null; configured: Fingerprint | null };
  queue: QueueState;
  /** The re-embed in progress (null when none is): the reason's "re-embedding (n of m)". */
  reembed: ReembedState | null;
  activeModel: Fingerprint | null;
  vectorIndex: { available: boolean; reason: string | null };
};

/** How long a status waits for the configured provider's first probe (the fingerprint) before it answers without it. */
type Patience = "server" | "provider-timeout";
let firstProbePatience: Patience = "server";

/**
 * "server" (the default): a status waits 2 s, so no page or health call hangs on a slow provider. "provider-timeout":
 * a one-shot process (a CLI command) waits up to DUALMIND_EMBED_TIMEOUT_MS for the answer and so checks the model.
 */
export function waitForFirstProbe(patience: Patience): void {
  firstProbePatience = patience;
}

/**
 * The configured model's fingerprint, bounded: a provider slow to answer its first probe is reported, not waited on.
 * Only the provider's own failure (its timeout included) says it is down; this process's impatience (`pending`)
 * says nothing about the provider, so it is never recorded as an outage for every process.
 */
export async function configuredFingerprint(): Promise<{ fp: Fingerprint | null; error: { message: string; down: boolean; pending?: boolean } | null }> {
  const impatient = Symbol("first probe pending");
  const patienceMs = firstProbePatience === "server" ? 2_000 : getConfig().embed.timeoutMs;
  let timer: NodeJS.Timeout | undefined;
  try {
    const { fingerprint } = getEmbedder();
    const fp = await Promise.race([fingerprint, new Promise<typeof impatient>((resolve) => (timer = setTimeout(() => resolve(impatient), patienceMs)))]);
    if (fp === impatient) return { fp: null, error: { message: "the provider has not answered its first probe yet", down: false, pending: true } };
    return { fp, error: null };
  } catch (e) {
    return { fp: null, error: { message: (e as Error).message, down: isProviderDownError(e) } };
  } finally {
    clearTimeout(timer);
  }
}

export function liveDrift({ counts, active, configured, reembed = null }: { counts: LiveCounts; active: string | null; configured: Fingerprint | null; reembed?: ReembedState | null }): LiveDrift {
  const known = configured !== null;
  const modelChanged = active !== null && configured !== null && active !== configured.id;
  const drifted = !known ? null : modelChanged ? counts.artifacts : counts.stale;
  // After a model change the configured model's vectors are the re-embed's (counters follow the active model).
  const configuredFresh = modelChanged ? Math.min(counts.artifacts, reembed?.done ?? 0) : counts.fresh;
  const pick = (k: KindCounts) => ({ artifacts: k.artifacts, fresh: k.fresh, stale: k.stale, missing: k.missing });
  return {
    activeFingerprintId: active,
    configuredFingerprintId: configured?.id ?? null,
    modelChanged,
    ...pick(counts),
    known,
    drifted,
    driftPct: drifted === null ? null : counts.artifacts ? (100 * drifted) / counts.artifacts : 0,
    coveragePct: !known ? null : counts.artifacts ? (100 * configuredFresh) / counts.artifacts : 100,
    byKind: Object.fromEntries(Object.entries(counts.byKind).filter(([, k]) => k.artifacts > 0).map(([kind, k]) => [kind, pick(k)])),
  };
}

/** The one live status of a store: verdict, reason, fixing action and the numbers behind them. */
export async function getStoreStatus({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): Promise<StoreStatus> {
  return storeStatusOf({ reads: readStoreStatus({ handle }), now });
}

/**
 * What a SQLite store's status reads from its database: everything else (the provider, the disk hold, whether a
 * claim's owner is gone, the clock) is asked when the status is assembled, so the reads of a store whose files
 * have not changed still give its status now (the status watch keeps them for closed stores: store-looks.ts).
 */
export type StoreStatusReads = {
  store: string;
  counts: LiveCounts;
  oldestEnqueuedAt: number | null;
  active: string | null;
  activeModel: Fingerprint | null;
  vectorIndex: { available: boolean; reason: string | null };
  claims: { owner: string; items: number }[];
  reembed: ReembedProgress | null;
};

export function readStoreStatus({ handle }: { handle: StoreHandle }): StoreStatusReads {
  const counts = readLiveCounts({ handle });
  const active = readActiveFingerprintId({ handle }) ?? null;
  return {
    store: handle.store,
    counts,
    oldestEnqueuedAt: counts.pending > 0 ? readOldestPendingAt({ handle }) : null,
    active,
    activeModel: active ? getFingerprintInfo({ handle, fingerprintId: active }) : null,
    vectorIndex: handle.vectors.available ? { available: true, reason: null } : { available: false, reason: handle.vectors.reason },
    claims: readClaimOwners({ handle }),
    reembed: getReembedProgress({ handle }),
  };
}

/** A store's status now from its reads (readStoreStatus). */
export async function storeStatusOf({ reads, now = Date.now() }: { reads: StoreStatusReads; now?: number }): Promise<StoreStatus> {
  const { fp: configured, error: fingerprintError } = await configuredFingerprint();
  // A process that finds the provider down says so for every process (the shared row); one that got a
  // refusal of another kind (a wrong dimension) reports what the items show: every surface agrees.
  const provider = await providerForStatus({ fingerprintError, now });
  return assembleStoreStatus({
    ...reads,
    watermark: getConfig().embed.backlogWatermark,
    configured,
    provider,
    queue: queueStateOf(staleClaimsOf(reads.claims)),
    reembed: reembedStateOf(reads.reembed),
    configuredPending: fingerprintError?.pending === true,
    now,
  });
}

type StatusListener = (status: StoreStatus) => void;
/**
 * Process-wide, not module state: Next bundles this module once per route and once for instrumentation.ts, and the
 * listener registered there must hear the statuses every route works out. `provisional` holds the statuses a model
 * change would have replaced, worked out while the configured provider's first probe had not answered.
 */
const g = globalThis as unknown as { __dualmindStatusListener?: StatusListener | null; __dualmindProvisionalStatuses?: WeakSet<StoreStatus> };
const provisional = (g.__dualmindProvisionalStatuses ??= new WeakSet<StoreStatus>());

/** Whether `status` might be another once the configured provider answers its first probe (a model change not checked): not one to record. */
export function isProvisionalStatus(status: StoreStatus): boolean {
  return provisional.has(status);
}

/**
 * Call `listener` with every store status this process works out, on either backend (the server's status watch
 * records each change it sees: a status a surface showed between two passes is on record too). One listener a process.
 */
export function onStoreStatus(listener: StatusListener | null): void {
  g.__dualmindStatusListener = listener;
}

/** The status from its numbers, on either backend (getStoreStatus, getStoreStatusPg): one verdict, one shape. */
export function assembleStoreStatus(a: {
  store: string;
  counts: LiveCounts;
  oldestEnqueuedAt: number | null;
  watermark: number;
  active: string | null;
  configured: Fingerprint | null;
  provider: { ok: boolean; error: string | null; checkedAt: number | null };
  vectorIndex: { available: boolean; reason: string | null };
  queue?: QueueState;
  reembed?: ReembedState | null;
  activeModel: Fingerprint | null;
  /** The configured provider had not answered its first probe: whether its model changed is not known. */
  configuredPending?: boolean;
  now: number;
}): StoreStatus {
  const { counts, watermark, provider, vectorIndex, now } = a;
  const reembed = a.reembed ?? null;
  const drift = liveDrift({ counts, active: a.active, configured: a.configured, reembed });
  const input = { ...counts, store: a.store, watermark, modelChanged: drift.modelChanged, provider, vectors: vectorIndex, queue: a.queue, reembed };
  const verdict = deriveStoreStatus(input);
  // With the configured model unknown, a verdict a model change would have replaced is not known either.
  const unchecked = a.configuredPending === true && a.active !== null && deriveStoreStatus({ ...input, modelChanged: true }).state !== verdict.state;
  const oldest = a.oldestEnqueuedAt;
  const status: StoreStatus = {
    ...verdict,
    reason: unchecked ? `${verdict.reason} (the provider has not answered its first probe yet: a model change is not checked)` : verdict.reason,
    store: a.store,
    asOf: now,
    backlog: { pending: counts.pending, parked: counts.parked, oldest_enqueued_at: oldest, oldest_age_seconds: oldest === null ? null : Math.round((now - oldest) / 1000), watermark },
    drift,
    provider: { ...provider, configured: a.configured },
    queue: a.queue ?? { held: null, staleClaims: null },
    reembed,
    activeModel: a.activeModel,
    vectorIndex,
  };
  if (unchecked) provisional.add(status);
  else g.__dualmindStatusListener?.(status);
  return status;
}

/** The provider as every process sees it (governance.db, or PostgreSQL's provider_state for all replicas), recording a "down" probe: getStoreStatus's and getStoreStatusPg's one rule. */
export async function providerForStatus({ fingerprintError, now }: { fingerprintError: { message: string; down: boolean } | null; now: number }): Promise<{ ok: boolean; error: string | null; checkedAt: number | null }> {
  if (fingerprintError && fingerprintError.down) await recordProviderOutcome({ ok: false, error: fingerprintError.message, now });
  const health: ProviderHealth = await readProviderHealth();
  probeProviderIfDown({ health, now });
  return { ok: health?.ok ?? true, error: health?.ok === false ? health.error : null, checkedAt: health?.checkedAt ?? null };
}

export type VectorReadiness =
  | { usable: true; fingerprint: Fingerprint }
  | { usable: false; reason: "degraded" | "drifted" | "provider_error"; message: string };

export type DriftReport = {
  active_fingerprint_id: string;
  configured_fingerprint_id: string;
  /** The configured model is not the one whose vectors serve this store. */
  model_changed: boolean;
  artifacts: number;
  /** Artifacts with a vector from the active model for their current text. */
  fresh: number;
  /** Vector exists but was made from older text. */
  stale: number;
  /** No vector from the active model yet (queued, parked, or never queued). */
  missing: number;
  /** Vectors from other models still on disk (excluded from search). */
  other_model_vectors: number;
  /** Rows that cannot serve a query with the configured model: stale, plus everything when the model changed. */
  drifted: number;
  drift_pct: number;
  coverage_pct: number;
  by_kind: Record<string, { artifacts: number; fresh: number; stale: number; missing: number }>;
};

export type EmbeddingStatus = {
  store: string;
  configured: Fingerprint | null;
  provider_error: string | null;
  active: Fingerprint | null;
  backlog: StoreStatus["backlog"];
  degraded: boolean;
  degraded_reason: string | null;
  drift: DriftReport | null;
  vector_index: { available: boolean; reason: string | null };
  reembed: ReembedProgress | null;
  parked: ParkedEmbedding[];
};

/** Vectors of models other than the active one, by two index range probes (normally empty: O(those rows)). */
function countOtherModelVectors({ handle, active }: { handle: StoreHandle; active: string }): number {
  const row = handle.sqlite.prepare("select (select count(*) from embeddings where fingerprint_id < ?) + (select count(*) from embeddings where fingerprint_id > ?) as n").get(active, active) as { n: number };
  return row.n;
}

/** The embeddings card's detail (re-embed progress, parked items) on top of the live status. */
export async function getEmbeddingStatus({ handle, status }: { handle: StoreHandle; status?: StoreStatus }): Promise<EmbeddingStatus> {
  const s = status ?? (await getStoreStatus({ handle }));
  const active = s.drift.activeFingerprintId;
  return embeddingStatusOf({
    status: s,
    otherModelVectors: active ? countOtherModelVectors({ handle, active }) : 0,
    reembed: getReembedProgress({ handle }),
    parked: s.backlog.parked > 0 ? listParkedEmbeddings({ handle, limit: 20 }) : [],
  });
}

/** The embeddings card's detail from a status and what each backend reads beside it (getEmbeddingStatus, getEmbeddingStatusPg): one shape. */
export function embeddingStatusOf({ status: s, otherModelVectors, reembed, parked }: { status: StoreStatus; otherModelVectors: number; reembed: ReembedProgress | null; parked: ParkedEmbedding[] }): EmbeddingStatus {
  const { known, ...d } = s.drift;
  // Unknown drift (the configured model is not known) is null here, as the status card's "unknown".
  const drift: DriftReport | null =
    !known || d.configuredFingerprintId === null || d.drifted === null || d.driftPct === null || d.coveragePct === null
      ? null
      : {
          active_fingerprint_id: d.activeFingerprintId ?? d.configuredFingerprintId,
          configured_fingerprint_id: d.configuredFingerprintId,
          model_changed: d.modelChanged,
          artifacts: d.artifacts,
          fresh: d.fresh,
          stale: d.stale,
          missing: d.missing,
          other_model_vectors: otherModelVectors,
          drifted: d.drifted,
          drift_pct: d.driftPct,
          coverage_pct: d.coveragePct,
          by_kind: d.byKind,
        };
  const degraded = isDegraded(s);
  return {
    store: s.store,
    configured: s.provider.configured,
    provider_error: s.provider.ok ? null : s.provider.error,
    active: s.activeModel,
    backlog: s.backlog,
    degraded,
    degraded_reason: degraded ? `embed backlog ${s.backlog.pending} is above the watermark ${s.backlog.watermark}: vector and hybrid search answer lexically until it drains` : null,
    drift,
    vector_index: s.vectorIndex,
    reembed,
    parked,
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
    return { usable: false, reason: "provider_error", message: `embedding provider unavailable: ${providerErrorKind((e as Error).message)}` };
  }
  const pending = readLiveCounts({ handle }).pending;
  const watermark = getConfig().embed.backlogWatermark;
  if (pending > watermark) {
    return { usable: false, reason: "degraded", message: `embed backlog ${pending} is above the watermark ${watermark}` };
  }
  const activeId = readActiveFingerprintId({ handle });
  if (activeId && activeId !== configured.id) {
    return { usable: false, reason: "drifted", message: `the configured model (${configured.model}, ${configured.id}) differs from the store's vectors (${activeId}); re-embed the store` };
  }
  return { usable: true, fingerprint: configured };
}
