import { log } from "../log";

/**
 * The alert webhook's delivery queue: in-process, fire-and-forget, one
 * delivery at a time with a timeout and backoff. Bounded: past MAX_QUEUED the
 * oldest waiting alert is given up (and reported) rather than letting memory
 * grow while a receiver is down.
 */
export type AlertPayload = {
  id: number;
  ts: string;
  kind: string;
  store: string | null;
  subject: string | null;
  status: string;
  previous_status: string | null;
  /** The system's own words. */
  reason: string;
  /** Text an agent wrote (e.g. its reason for abandoning a review), quoted apart: never an instruction from dualmind. */
  agent_text: string | null;
  /** The agent whose text `agent_text` is. */
  agent_id: string | null;
};
export type DeliveryResult = { delivered: boolean; attempts: number; error: string | null };
/** onSettled records the outcome (on PostgreSQL a query): not awaited by the queue (a slow database never delays the next alert), but "idle" waits for it. */
type Job = { url: string; payload: AlertPayload; onSettled: (r: DeliveryResult) => void | Promise<void> };

export const ALERT_ATTEMPTS = 5;
export const ALERT_TIMEOUT_MS = 5_000;
const BACKOFF_BASE_MS = 500;
const MAX_QUEUED = 500;

const g = globalThis as unknown as { __dualmindAlertQueue?: { jobs: Job[]; running: boolean; idle: (() => void)[]; settling: Set<Promise<void>> }; __dualmindAlertTiming?: { timeoutMs: number; backoffBaseMs: number } };
function queue() {
  return (g.__dualmindAlertQueue ??= { jobs: [], running: false, idle: [], settling: new Set() });
}
function timing() {
  return g.__dualmindAlertTiming ?? { timeoutMs: ALERT_TIMEOUT_MS, backoffBaseMs: BACKOFF_BASE_MS };
}

/** Tests only: shorter timeouts and backoff, so a slow or down receiver is exercised in seconds. */
export function setAlertTimingForTests(t: { timeoutMs: number; backoffBaseMs: number } | null): void {
  g.__dualmindAlertTiming = t ?? undefined;
}

/**
 * Alerts one agent's actions may cause per hour (DUALMIND_ALERTS_PER_AGENT_PER_HOUR),
 * and store status changes one store may send per hour (DUALMIND_ALERTS_PER_STORE_PER_HOUR:
 * a write token can flip its store between healthy and degraded by its own writes),
 * counted in this process over a sliding hour: neither can flood the operators'
 * receiver. Returns whether this one may be sent; the caller records the others
 * as not sent. Keys are agents and stores the server knows, so the maps hold only
 * the last hour's.
 */
const HOUR_MS = 3_600_000;
const gAlerts = globalThis as unknown as { __dualmindAlertsByAgent?: Map<string, number[]>; __dualmindAlertsByStore?: Map<string, number[]> };
function takeSlot(byKey: Map<string, number[]>, key: string, limit: number, now: number): boolean {
  const recent = (byKey.get(key) ?? []).filter((t) => t > now - HOUR_MS);
  for (const [k, times] of byKey) if (times.every((t) => t <= now - HOUR_MS)) byKey.delete(k);
  if (recent.length >= limit) {
    byKey.set(key, recent);
    return false;
  }
  recent.push(now);
  byKey.set(key, recent);
  return true;
}
export function takeAgentAlertSlot({ agentId, limit, now = Date.now() }: { agentId: string; limit: number; now?: number }): boolean {
  return takeSlot((gAlerts.__dualmindAlertsByAgent ??= new Map<string, number[]>()), agentId, limit, now);
}
export function takeStoreAlertSlot({ store, limit, now = Date.now() }: { store: string; limit: number; now?: number }): boolean {
  return takeSlot((gAlerts.__dualmindAlertsByStore ??= new Map<string, number[]>()), store, limit, now);
}

/** Queue one alert; returns at once. */
export function sendAlert(job: Job): void {
  const q = queue();
  q.jobs.push(job);
  if (q.jobs.length > MAX_QUEUED) {
    const dropped = q.jobs.shift()!;
    settle(dropped, { delivered: false, attempts: 0, error: `alert queue full (${MAX_QUEUED} waiting): given up` });
  }
  if (!q.running) void drain();
}

/** Resolves when every queued alert has been delivered or given up, and its outcome recorded (tests, shutdown). */
export async function alertQueueIdle(): Promise<void> {
  const q = queue();
  if (q.running || q.jobs.length > 0) await new Promise<void>((resolve) => q.idle.push(resolve));
  await Promise.allSettled([...q.settling]);
}

/** Record a job's outcome off the queue's path; alertQueueIdle waits for the records still being written. */
function settle(job: Job, result: DeliveryResult): void {
  const q = queue();
  const p = Promise.resolve()
    .then(() => job.onSettled(result))
    .catch((e: Error) => log("warn", "alert delivery bookkeeping failed", { error: e.message }))
    .finally(() => q.settling.delete(p));
  q.settling.add(p);
}

async function postOnce(url: string, payload: AlertPayload): Promise<string | null> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "user-agent": "dualmind-alerts" },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(timing().timeoutMs),
      redirect: "error",
    });
    await res.body?.cancel();
    return res.ok ? null : `receiver answered ${res.status}`;
  } catch (e) {
    const err = e as Error;
    return err.name === "TimeoutError" ? `receiver did not answer within ${timing().timeoutMs} ms` : `cannot reach the receiver: ${err.message}`;
  }
}

async function deliver(job: Job): Promise<DeliveryResult> {
  let error: string | null = null;
  for (let attempt = 1; attempt <= ALERT_ATTEMPTS; attempt++) {
    error = await postOnce(job.url, job.payload);
    if (error === null) return { delivered: true, attempts: attempt, error: null };
    if (attempt < ALERT_ATTEMPTS) await new Promise((r) => setTimeout(r, timing().backoffBaseMs * 2 ** (attempt - 1)).unref());
  }
  log("warn", "alert webhook delivery failed", { id: job.payload.id, error });
  return { delivered: false, attempts: ALERT_ATTEMPTS, error };
}

async function drain(): Promise<void> {
  const q = queue();
  q.running = true;
  try {
    for (let job = q.jobs.shift(); job; job = q.jobs.shift()) {
      settle(job, await deliver(job));
    }
  } finally {
    q.running = false;
    for (const resolve of q.idle.splice(0)) resolve();
  }
}
