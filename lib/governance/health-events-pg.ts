import { and, desc, eq, gt, sql } from "drizzle-orm";
import type { PgGovernanceExecutor } from "../db/pg";
import { dialecticSessions, healthEvents, storeStatusCurrent } from "../db/schema/pg/governance";
import type { HealthEvent, NewHealthEvent } from "./health-events";

/**
 * Health events on PostgreSQL (DATABASE_URL): the same rules as the SQLite
 * twin in ./health-events.ts, shared by every replica. A status change is
 * recorded under the store's `store_status_current` row lock, so two replicas
 * observing one change record it once; a failed dialectic session is unique
 * per (kind, subject), so the replica whose insert wins is the one that sends
 * its webhook.
 */
export async function insertEventPg(db: PgGovernanceExecutor, values: NewHealthEvent, webhookState: HealthEvent["webhookState"]): Promise<HealthEvent | null> {
  const [row] = await db.insert(healthEvents).values({ ...values, webhookState }).onConflictDoNothing().returning({ id: healthEvents.id });
  return row ? { ...values, id: row.id, webhookState, webhookAttempts: 0, webhookError: null } : null;
}

export async function observeStoreStatusPg({ db, store, status, reason, now, webhookState }: { db: PgGovernanceExecutor; store: string; status: string; reason: string; now: number; webhookState: HealthEvent["webhookState"] }): Promise<HealthEvent | null> {
  return db.transaction(async (tx) => {
    // Insert-or-lock: a first sighting races only on the insert (one wins), later ones queue on the row.
    await tx.insert(storeStatusCurrent).values({ store, status: "", reason: "", since: now }).onConflictDoNothing();
    const [prev] = await tx.select({ status: storeStatusCurrent.status }).from(storeStatusCurrent).where(eq(storeStatusCurrent.store, store)).for("update");
    const previous = prev?.status ? prev.status : null;
    if (previous === status) return null;
    await tx.update(storeStatusCurrent).set({ status, reason, since: now }).where(eq(storeStatusCurrent.store, store));
    if (!previous && status === "healthy") return null;
    return insertEventPg(tx, { ts: now, kind: "store_status", store, subject: null, status, previousStatus: previous, reason }, webhookState);
  });
}

export async function observeFailedDialecticSessionsPg({ db, now, lookbackMs, webhookState }: { db: PgGovernanceExecutor; now: number; lookbackMs: number; webhookState: HealthEvent["webhookState"] }): Promise<HealthEvent[]> {
  const [{ ts: newest }] = await db.select({ ts: sql<string | null>`max(${healthEvents.ts})` }).from(healthEvents).where(eq(healthEvents.kind, "dialectic_failed"));
  const since = Math.max(now - lookbackMs, newest === null ? 0 : Number(newest));
  const failed = await db
    .select({ id: dialecticSessions.sessionId, reason: dialecticSessions.failureReason, at: dialecticSessions.updatedAt })
    .from(dialecticSessions)
    .where(and(eq(dialecticSessions.status, "failed"), gt(dialecticSessions.updatedAt, since - 1)))
    .limit(100);
  const events: HealthEvent[] = [];
  for (const f of failed) {
    const e = await insertEventPg(db, { ts: f.at, kind: "dialectic_failed", store: null, subject: f.id, status: "failed", previousStatus: null, reason: f.reason ?? "failed" }, webhookState);
    if (e) events.push(e);
  }
  return events;
}

export async function settleHealthEventDeliveryPg({ db, id, delivered, attempts, error }: { db: PgGovernanceExecutor; id: number; delivered: boolean; attempts: number; error: string | null }): Promise<void> {
  await db.update(healthEvents).set({ webhookState: delivered ? "delivered" : "failed", webhookAttempts: attempts, webhookError: error }).where(eq(healthEvents.id, id));
}

export async function listRecentHealthEventsPg({ db, store, limit }: { db: PgGovernanceExecutor; store?: string; limit: number }) {
  const q = db.select().from(healthEvents);
  return (store ? q.where(sql`${healthEvents.store} = ${store} or ${healthEvents.store} is null`) : q).orderBy(desc(healthEvents.ts), desc(healthEvents.id)).limit(limit);
}
