import { and, desc, eq, gt, sql } from "drizzle-orm";
import { getConfig } from "../config";
import { getGovernance } from "../db/connection";
import { getPg } from "../db/pg";
import { dialecticSessions, healthEvents, storeStatusCurrent, type HealthEventRow } from "../db/schema/governance";
import { log } from "../log";
import { sendAlert, takeAgentAlertSlot, type AlertPayload } from "./alert-webhook";
import { splitFailureReason } from "./dialectic";
import { insertEventPg, listRecentHealthEventsPg, observeFailedDialecticSessionsPg, observeStoreStatusPg, settleHealthEventDeliveryPg } from "./health-events-pg";

/**
 * Alerts: a store whose status changes (to degraded, drifted,
 * provider down, parked, vectors unavailable — and back to healthy) and a
 * dialectic session that fails each become one health_events row, shown on
 * Health and, when DUALMIND_ALERT_WEBHOOK_URL is set, POSTed there by a
 * background queue (lib/governance/alert-webhook.ts) that never blocks a request.
 * With DATABASE_URL the events live in PostgreSQL beside the ledger
 * (./health-events-pg.ts), one history for every replica.
 */
export type HealthEvent = {
  id: number;
  ts: number;
  kind: HealthEventRow["kind"];
  store: string | null;
  subject: string | null;
  status: string;
  previousStatus: string | null;
  reason: string;
  webhookState: HealthEventRow["webhookState"];
  webhookAttempts: number;
  webhookError: string | null;
};

export type NewHealthEvent = Omit<HealthEvent, "id" | "webhookState" | "webhookAttempts" | "webhookError">;

function newWebhookState(): HealthEvent["webhookState"] {
  return getConfig().alertWebhookUrl ? "pending" : "none";
}

function toPayload(e: HealthEvent): AlertPayload {
  const { system, agentId, agentText } = e.kind === "dialectic_failed" ? splitFailureReason(e.reason) : { system: e.reason, agentId: null, agentText: null };
  return { id: e.id, ts: new Date(e.ts).toISOString(), kind: e.kind, store: e.store, subject: e.subject, status: e.status, previous_status: e.previousStatus, reason: system, agent_text: agentText, agent_id: agentId };
}

function dispatch(events: HealthEvent[]): void {
  const url = getConfig().alertWebhookUrl;
  if (!url) return;
  const limit = getConfig().limits.alertsPerAgentPerHour;
  for (const e of events) {
    const payload = toPayload(e);
    if (payload.agent_id !== null && !takeAgentAlertSlot({ agentId: payload.agent_id, limit })) {
      void settleDelivery({ id: e.id, delivered: false, attempts: 0, error: `not sent: agent ${payload.agent_id} reached DUALMIND_ALERTS_PER_AGENT_PER_HOUR (${limit})` });
      continue;
    }
    sendAlert({ url, payload, onSettled: (r) => settleDelivery({ id: e.id, ...r }) });
  }
}

async function settleDelivery({ id, delivered, attempts, error }: { id: number; delivered: boolean; attempts: number; error: string | null }): Promise<void> {
  try {
    const pg = getPg();
    if (pg) return await settleHealthEventDeliveryPg({ db: (await pg).db, id, delivered, attempts, error });
    getGovernance()
      .db.update(healthEvents)
      .set({ webhookState: delivered ? "delivered" : "failed", webhookAttempts: attempts, webhookError: error })
      .where(eq(healthEvents.id, id))
      .run();
  } catch (e) {
    log("warn", "could not record an alert delivery", { id, error: (e as Error).message });
  }
}

function insertEvent(values: NewHealthEvent): HealthEvent | null {
  const webhookState = newWebhookState();
  const row = getGovernance()
    .db.insert(healthEvents)
    .values({ ...values, webhookState })
    .onConflictDoNothing()
    .returning({ id: healthEvents.id })
    .get();
  return row ? { ...values, id: row.id, webhookState, webhookAttempts: 0, webhookError: null } : null;
}

/**
 * Compare a store's status with the one it was last seen in; on a change,
 * record the event (one transaction: two observers never record one change
 * twice) and queue its webhook. The first sighting of a healthy store is not an event.
 */
export async function observeStoreStatus({ store, status, reason, now = Date.now() }: { store: string; status: string; reason: string; now?: number }): Promise<HealthEvent | null> {
  const pg = getPg();
  if (pg) {
    const event = await observeStoreStatusPg({ db: (await pg).db, store, status, reason, now, webhookState: newWebhookState() });
    if (event) dispatch([event]);
    return event;
  }
  const { sqlite, db } = getGovernance();
  const event = sqlite
    .transaction((): HealthEvent | null => {
      const prev = db.select({ status: storeStatusCurrent.status }).from(storeStatusCurrent).where(eq(storeStatusCurrent.store, store)).get();
      if (prev?.status === status) return null;
      db.insert(storeStatusCurrent)
        .values({ store, status, reason, since: now })
        .onConflictDoUpdate({ target: storeStatusCurrent.store, set: { status, reason, since: now } })
        .run();
      if (!prev && status === "healthy") return null;
      return insertEvent({ ts: now, kind: "store_status", store, subject: null, status, previousStatus: prev?.status ?? null, reason });
    })
    .immediate();
  if (event) dispatch([event]);
  return event;
}

/**
 * An event that is not a status change (a store's self-recall fell): recorded
 * once per (kind, subject) and its webhook queued, like a failed dialectic session.
 */
export async function recordHealthEvent(values: NewHealthEvent): Promise<HealthEvent | null> {
  const pg = getPg();
  const event = pg ? await insertEventPg((await pg).db, values, newWebhookState()) : insertEvent(values);
  if (event) dispatch([event]);
  return event;
}

/** Dialectic sessions that failed since the newest one already recorded: one event each (indexed by status, updated_at). */
export async function observeFailedDialecticSessions({ now = Date.now(), lookbackMs = 24 * 3_600_000 }: { now?: number; lookbackMs?: number } = {}): Promise<HealthEvent[]> {
  const pg = getPg();
  if (pg) {
    const events = await observeFailedDialecticSessionsPg({ db: (await pg).db, now, lookbackMs, webhookState: newWebhookState() });
    dispatch(events);
    return events;
  }
  const { db } = getGovernance();
  const newest = db.select({ ts: sql<number | null>`max(${healthEvents.ts})` }).from(healthEvents).where(eq(healthEvents.kind, "dialectic_failed")).get()?.ts ?? null;
  const since = Math.max(now - lookbackMs, newest ?? 0);
  const failed = db
    .select({ id: dialecticSessions.sessionId, reason: dialecticSessions.failureReason, at: dialecticSessions.updatedAt })
    .from(dialecticSessions)
    .where(and(eq(dialecticSessions.status, "failed"), gt(dialecticSessions.updatedAt, since - 1)))
    .limit(100)
    .all();
  const events = failed
    .map((f) => insertEvent({ ts: f.at, kind: "dialectic_failed", store: null, subject: f.id, status: "failed", previousStatus: null, reason: f.reason ?? "failed" }))
    .filter((e): e is HealthEvent => e !== null);
  dispatch(events);
  return events;
}

/** The newest events, for Health (all stores, or one store plus the events that name no store). */
export async function listRecentHealthEvents({ store, limit = 20 }: { store?: string; limit?: number } = {}): Promise<HealthEvent[]> {
  const pg = getPg();
  let rows;
  if (pg) rows = await listRecentHealthEventsPg({ db: (await pg).db, store, limit });
  else {
    const q = getGovernance().db.select().from(healthEvents);
    rows = (store ? q.where(sql`${healthEvents.store} = ${store} or ${healthEvents.store} is null`) : q).orderBy(desc(healthEvents.ts), desc(healthEvents.id)).limit(limit).all();
  }
  return rows.map((r) => ({
    id: r.id,
    ts: r.ts,
    kind: r.kind,
    store: r.store,
    subject: r.subject,
    status: r.status,
    previousStatus: r.previousStatus,
    reason: r.reason,
    webhookState: r.webhookState,
    webhookAttempts: r.webhookAttempts,
    webhookError: r.webhookError,
  }));
}
