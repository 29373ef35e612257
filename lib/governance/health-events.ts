import { and, desc, eq, gt, isNull, max, or, sql } from "drizzle-orm";
import { getConfig } from "../config";
import { processLedger } from "../db/engine";
import { insertOrIgnore, readLedger, row, rows, select, sqlRun, update, writeLedger, type LedgerHandle, type Op } from "../db/port";
import type { HealthEventRow } from "../db/schema/governance";
import { log } from "../log";
import { sendAlert, takeAgentAlertSlot, takeStoreAlertSlot, type AlertPayload } from "./alert-webhook";
import { failureAgentOf, splitFailureReason } from "./dialectic";
import { ledgerTables } from "./tables";

const { healthEvents, storeStatusCurrent, dialecticSessions } = ledgerTables;

/**
 * Alerts (docs/operations.md): a store status change and a failed dialectic
 * session each become one health_events row, shown on Health and POSTed to
 * DUALMIND_ALERT_WEBHOOK_URL by lib/governance/alert-webhook.ts. On
 * PostgreSQL, replicas record each once: a status change under the store's
 * `store_status_current` row lock; a failed session is unique per (kind,
 * subject), so the replica whose insert wins sends its webhook.
 */
export type HealthEvent = Omit<HealthEventRow, "details">;

export type NewHealthEvent = Omit<HealthEvent, "id" | "webhookState" | "webhookAttempts" | "webhookError">;

/** An event on its way to the webhook, with the agent its alert counts against (a failed review's, from the session's fields). */
type DispatchedEvent = HealthEvent & { agentId?: string | null };

function newWebhookState(): HealthEvent["webhookState"] {
  return getConfig().alertWebhookUrl ? "pending" : "none";
}

function toPayload(e: DispatchedEvent): AlertPayload {
  const { system, agentText } = e.kind === "dialectic_failed" ? splitFailureReason(e.reason) : { system: e.reason, agentText: null };
  return { id: e.id, ts: new Date(e.ts).toISOString(), kind: e.kind, store: e.store, subject: e.subject, status: e.status, previous_status: e.previousStatus, reason: system, agent_text: agentText, agent_id: e.agentId ?? null };
}

function dispatch(events: DispatchedEvent[]): void {
  const url = getConfig().alertWebhookUrl;
  if (!url) return;
  const { alertsPerAgentPerHour: limit, alertsPerStorePerHour: perStore } = getConfig().limits;
  for (const e of events) {
    const payload = toPayload(e);
    if (payload.agent_id !== null && !takeAgentAlertSlot({ agentId: payload.agent_id, limit })) {
      void settleDelivery({ id: e.id, delivered: false, attempts: 0, error: `not sent: agent ${payload.agent_id} reached DUALMIND_ALERTS_PER_AGENT_PER_HOUR (${limit})` });
      continue;
    }
    if (e.kind === "store_status" && e.store !== null && !takeStoreAlertSlot({ store: e.store, limit: perStore })) {
      void settleDelivery({ id: e.id, delivered: false, attempts: 0, error: `not sent: store ${e.store} changed status more than DUALMIND_ALERTS_PER_STORE_PER_HOUR (${perStore}) times this hour` });
      continue;
    }
    sendAlert({ url, payload, onSettled: (r) => settleDelivery({ id: e.id, ...r }) });
  }
}

async function settleDelivery({ id, delivered, attempts, error }: { id: number; delivered: boolean; attempts: number; error: string | null }): Promise<void> {
  try {
    await writeLedger(await processLedger(), update(healthEvents, { webhookState: delivered ? "delivered" : "failed", webhookAttempts: attempts, webhookError: error }, (t) => eq(t.id, id)));
  } catch (e) {
    log("warn", "could not record an alert delivery", { id, error: (e as Error).message });
  }
}

/** Rows the history lets go of per new event, oldest first: a history past its bound shrinks back in bounded steps. */
const PRUNE_BATCH = 200;

function* insertEvent(values: NewHealthEvent): Op<HealthEvent | null> {
  const webhookState = newWebhookState();
  const created = yield* insertOrIgnore(healthEvents, { ...values, webhookState }, (t) => [t.kind, t.subject]);
  if (!created) return null;
  // The history keeps the newest DUALMIND_HEALTH_EVENTS_MAX_ROWS events (a flapping store cannot grow it for ever).
  const cutoff = created.id - getConfig().limits.healthEventsMaxRows;
  if (cutoff > 0) yield* sqlRun(sql`delete from health_events where id in (select id from health_events where id <= ${cutoff} order by id limit ${PRUNE_BATCH})`);
  return { ...values, id: created.id, webhookState, webhookAttempts: 0, webhookError: null };
}

/**
 * Compare a store's status with the one it was last seen in; on a change,
 * record the event (one transaction: two observers never record one change
 * twice) and queue its webhook. The first sighting of a healthy store is not an event.
 * `now` is when the status was read: one read before the status on record began is stale and changes nothing.
 */
export async function observeStoreStatus(input: { store: string; status: string; reason: string; now?: number; handle?: LedgerHandle }): Promise<HealthEvent | null> {
  return (await observeStoreStatusOnRecord(input)).event;
}

/** observeStoreStatus, also answering the status on record afterwards (not the one observed when that was stale). */
export async function observeStoreStatusOnRecord({ store, status, reason, now = Date.now(), handle }: { store: string; status: string; reason: string; now?: number; handle?: LedgerHandle }): Promise<{ event: HealthEvent | null; onRecord: string }> {
  const outcome = await writeLedger(handle ?? (await processLedger()), function* () {
    // Insert-or-lock: a first sighting races only on the insert (one wins), later ones queue on the row.
    yield* insertOrIgnore(storeStatusCurrent, { store, status: "", reason: "", since: now }, (t) => [t.store]);
    const prev = yield* row(storeStatusCurrent, (t) => eq(t.store, store), { lock: "update" });
    const previous = prev?.status ? prev.status : null;
    if (previous === status) return { event: null, onRecord: status };
    // Seen before the status on record was (another request or replica saw a newer one first): not a change.
    if (previous && prev && prev.since > now) return { event: null, onRecord: previous };
    yield* update(storeStatusCurrent, { status, reason, since: now }, (t) => eq(t.store, store));
    if (!previous && status === "healthy") return { event: null, onRecord: status };
    return { event: yield* insertEvent({ ts: now, kind: "store_status", store, subject: null, status, previousStatus: previous, reason }), onRecord: status };
  });
  if (outcome.event) dispatch([outcome.event]);
  return outcome;
}

/**
 * An event that is not a status change (a store's self-recall fell): recorded
 * once per (kind, subject) and its webhook queued, like a failed dialectic session.
 */
export async function recordHealthEvent(values: NewHealthEvent): Promise<HealthEvent | null> {
  const event = await writeLedger(await processLedger(), insertEvent(values));
  if (event) dispatch([event]);
  return event;
}

/** Dialectic sessions that failed since the newest one already recorded: one event each (indexed by status, updated_at). */
export async function observeFailedDialecticSessions({ now = Date.now(), lookbackMs = 24 * 3_600_000 }: { now?: number; lookbackMs?: number } = {}): Promise<HealthEvent[]> {
  const events = await writeLedger(await processLedger(), function* () {
    const [{ ts: newest }] = yield* select({ healthEvents }, (db, t) => db.select({ ts: max(t.healthEvents.ts) }).from(t.healthEvents).where(eq(t.healthEvents.kind, "dialectic_failed")));
    const since = Math.max(now - lookbackMs, newest === null ? 0 : Number(newest));
    const failed = yield* rows(dialecticSessions, { where: (t) => and(eq(t.status, "failed"), gt(t.updatedAt, since - 1)), limit: 100 });
    const recorded: DispatchedEvent[] = [];
    for (const f of failed) {
      const e = yield* insertEvent({ ts: f.updatedAt, kind: "dialectic_failed", store: null, subject: f.sessionId, status: "failed", previousStatus: null, reason: f.failureReason ?? "failed" });
      if (e) recorded.push({ ...e, agentId: failureAgentOf(f) });
    }
    return recorded;
  });
  dispatch(events);
  return events;
}

/** The newest events, for Health (all stores, or one store plus the events that name no store). */
export async function listRecentHealthEvents({ store, limit = 20 }: { store?: string; limit?: number } = {}): Promise<HealthEvent[]> {
  const found = await readLedger(await processLedger(), rows(healthEvents, { where: (t) => (store ? or(eq(t.store, store), isNull(t.store)) : undefined), orderBy: (t) => [desc(t.ts), desc(t.id)], limit }));
  return found.map(({ details: _details, ...event }) => event);
}
