import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { getConfig } from "../config";
import { EmbeddingError } from "./types";

/**
 * The embed queue's rules for faults that are not the items' own, written
 * once for both backends (docs/embedding-queue.md): "provider" and "disk"
 * faults hand the batch back without spending attempts and hold the queue;
 * only "item" faults (the provider refused this input) spend attempts and
 * park. A batch that fails with a "provider" error right after a passing
 * probe is charged as an item error, so a poison input parks instead of
 * holding the queue for ever.
 */
export type FailureScope = "provider" | "disk" | "item";

const ITEM_KINDS = new Set<EmbeddingError["kind"]>(["bad_request", "dimension_mismatch"]);

export function isDiskFullError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (code === "SQLITE_FULL" || code === "ENOSPC" || code === "53100") return true;
  return /database or disk is full|no space left on device/i.test(e instanceof Error ? e.message : String(e));
}

export function failureScopeOf(e: unknown): FailureScope {
  if (isDiskFullError(e)) return "disk";
  if (e instanceof EmbeddingError) return ITEM_KINDS.has(e.kind) ? "item" : "provider";
  return "item";
}

/**
 * Errors kept on rows parked by a provider outage or a full disk (under the
 * rules before this module, which spent attempts on them): such rows go back
 * in line once the provider answers and the disk takes writes.
 */
const OUTAGE_ERROR_PREFIXES = ["server:", "timeout:", "network:", "rate_limited:", "unavailable:", "auth:", "bad_response:", "provenance:", "disk_full:"];
const OUTAGE_ERROR_PATTERNS = [...OUTAGE_ERROR_PREFIXES.map((p) => `${p}%`), "%SQLITE_FULL%", "%database or disk is full%"];
/** `last_error like any of these` selects rows parked by an outage (the same LIKE on both databases). */
export function outageParkedPatterns(): readonly string[] {
  return OUTAGE_ERROR_PATTERNS;
}

export type QueueHold = { scope: "provider" | "disk"; error: string; since: number; until: number; failures: number };

/**
 * Per process. A provider hold belongs to the provider object that failed (a
 * worker given another embedder is not held by it); the disk hold to the
 * process. Another configuration (tests, a config change) starts without holds.
 */
type ProviderHold = { hold: QueueHold | null; probedOkAt: number | null };
type HoldState = { key: string; providers: WeakMap<object, ProviderHold>; disk: QueueHold | null; swept: Set<string> };
const g = globalThis as unknown as { __dualmindEmbedHolds?: HoldState };
function holds(): HoldState {
  const e = getConfig().embed;
  const key = `${e.provider}:${e.model}@${e.baseUrl}`;
  if (g.__dualmindEmbedHolds?.key !== key) g.__dualmindEmbedHolds = { key, providers: new WeakMap(), disk: null, swept: new Set() };
  return g.__dualmindEmbedHolds;
}
function providerHold(provider: object): ProviderHold {
  const s = holds();
  let p = s.providers.get(provider);
  if (!p) s.providers.set(provider, (p = { hold: null, probedOkAt: null }));
  return p;
}

function holdDelayMs(failures: number, minMs = 0): number {
  const cap = getConfig().embed.outageMaxBackoffMs;
  return Math.max(minMs, Math.min(cap, Math.min(1_000, cap) * 2 ** Math.max(0, failures - 1)));
}

/** Open (or extend) a hold: each consecutive failure doubles the wait, up to DUALMIND_EMBED_OUTAGE_MAX_BACKOFF_MS. */
export function openHold({ scope, provider, error, minDelayMs = 0, now = Date.now() }: { scope: QueueHold["scope"]; provider?: object; error: string; minDelayMs?: number; now?: number }): QueueHold {
  const p = scope === "provider" ? providerHold(provider ?? holds()) : null;
  const prev = p ? p.hold : holds().disk;
  const failures = (prev?.failures ?? 0) + 1;
  const hold = { scope, error: error.slice(0, 500), since: prev?.since ?? now, until: now + holdDelayMs(failures, minDelayMs), failures };
  if (p) Object.assign(p, { hold, probedOkAt: null });
  else holds().disk = hold;
  return hold;
}

/** The hold in force for a worker using `provider`: the provider's first, else the disk's (its `until` says when the next probe or claim may try). */
export function currentHold(provider: object): QueueHold | null {
  return providerHold(provider).hold ?? holds().disk;
}

/** The disk hold of this process, if any (health reports it). */
export function diskHold(): QueueHold | null {
  return holds().disk;
}

/**
 * Close a hold after the thing it waited for worked. Returns true when one
 * was open: the worker then sweeps outage-parked rows back into line.
 */
export function closeHold({ scope, provider }: { scope: QueueHold["scope"]; provider?: object }): boolean {
  const s = holds();
  let was: boolean;
  if (scope === "provider") {
    const p = providerHold(provider ?? s);
    was = p.hold !== null;
    p.hold = null;
  } else {
    was = s.disk !== null;
    s.disk = null;
  }
  if (was) s.swept.clear();
  return was;
}

/** The probe answered: remember it, so a batch failing right after is charged (see the module comment). */
export function noteProbeOk({ provider, now = Date.now() }: { provider: object; now?: number }): void {
  providerHold(provider).probedOkAt = now;
}

/** Was the provider's last word a passed probe (no batch has been sent since)? Consumed by the call. */
export function takeProbeOk(provider: object): boolean {
  const p = providerHold(provider);
  const ok = p.probedOkAt !== null;
  p.probedOkAt = null;
  return ok;
}

/** Whether the store's outage-parked rows are still to be swept (shouldSweepParked would say so), without claiming the sweep. */
export function sweepParkedPending(store: string): boolean {
  const s = holds();
  return !s.disk && !s.swept.has(store);
}

/** Sweep outage-parked rows of a store once per process and once after each recovery. Returns true the first time. */
export function shouldSweepParked(store: string): boolean {
  const s = holds();
  if (s.disk || s.swept.has(store)) return false;
  s.swept.add(store);
  return true;
}

export function resetHoldsForTests(): void {
  g.__dualmindEmbedHolds = undefined;
}

/** The error a held item keeps: its kind first, so outageParkedPatterns knows it. */
export function holdErrorText({ scope, error: e }: { scope: FailureScope; error: unknown }): string {
  if (scope === "disk") return `disk_full: ${e instanceof Error ? e.message : String(e)}`;
  return e instanceof EmbeddingError ? `${e.kind}: ${e.message}` : `unavailable: ${e instanceof Error ? e.message : String(e)}`;
}

/**
 * Claim owners name their host and process (`<prefix>-<pid>-<random>@<host>`),
 * so a worker starting on the same host can tell a claim whose process is
 * gone (kill -9, OOM) and release it at once instead of waiting out the lease.
 */
export function newClaimOwnerId(prefix: string): string {
  return `${prefix}-${process.pid}-${randomUUID().slice(0, 8)}@${hostname()}`;
}

export function parseClaimOwner(owner: string): { pid: number; host: string } | null {
  const m = /-(\d+)-[0-9a-f]{8}@(.+)$/.exec(owner);
  return m ? { pid: Number(m[1]), host: m[2] } : null;
}

/** Whether a process of this host is running (this one always is). */
export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A claim owner on this host whose process no longer exists (never true for another host: only its lease frees those). */
export function isDeadLocalOwner(owner: string): boolean {
  const o = parseClaimOwner(owner);
  return o !== null && o.host === hostname() && !processAlive(o.pid);
}

export type StaleClaims = { items: number; owners: string[] };

/** What a store's health says about claims whose worker is gone (null when there are none). */
export function staleClaimsOf(rows: { owner: string; items: number }[]): StaleClaims | null {
  const dead = rows.filter((r) => isDeadLocalOwner(r.owner));
  if (dead.length === 0) return null;
  return { items: dead.reduce((a, r) => a + r.items, 0), owners: dead.map((r) => r.owner) };
}

/** Seconds a worker waits for one embedding request: long enough for a slow provider, shorter than the claim's lease. */
export function workerRequestTimeoutMs(leaseMs = getConfig().embed.leaseMs): number {
  return Math.min(getConfig().embed.workerTimeoutMs, Math.floor(leaseMs * 0.8));
}
