import { eq, inArray, sql } from "drizzle-orm";
import { PG_LOCK, type PgGovernanceExecutor } from "../db/pg";
import { loginThrottle } from "../db/schema/pg/governance";
import { appendAuditPg } from "../governance/audit-pg";
import { attemptKeyNames, attemptKeys, forgottenBy, planSettle, planSignInGate, pruneDue, userThrottleKey, type SignInGate } from "./login-throttle";

/**
 * The login throttle on PostgreSQL (the SQLite twin and the policy are in
 * ./login-throttle.ts). Every gate and settle runs in one transaction under
 * one advisory lock, so attempts on any replica take turns exactly as they
 * do under SQLite's write lock: a burst spread over N servers still lets at
 * most `freeFailures` guesses through. The lock is held for a few row reads
 * and writes, never across scrypt.
 */
async function lockThrottle(tx: PgGovernanceExecutor): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${PG_LOCK.loginThrottle})`);
}

async function readRows(tx: PgGovernanceExecutor, keys: { username: string; address: string | null }) {
  return tx.select().from(loginThrottle).where(inArray(loginThrottle.key, attemptKeyNames(keys)));
}

export async function beginSignInAttemptPg({ db, username, address, now = Date.now() }: { db: PgGovernanceExecutor; username: string; address: string | null; now?: number }): Promise<SignInGate> {
  return db.transaction(async (tx) => {
    await lockThrottle(tx);
    if (pruneDue(now)) await tx.delete(loginThrottle).where(forgottenBy(loginThrottle, now));
    const keyed = attemptKeys({ username, address, rows: await readRows(tx, { username, address }), forgetAt: now });
    const { gate, charges } = planSignInGate({ keyed, now });
    for (const values of charges) await tx.insert(loginThrottle).values(values).onConflictDoUpdate({ target: loginThrottle.key, set: values });
    return gate;
  });
}

export async function settleSignInAttemptPg({ db, username, address, succeeded, now = Date.now() }: { db: PgGovernanceExecutor; username: string; address: string | null; succeeded: boolean; now?: number }): Promise<void> {
  await db.transaction(async (tx) => {
    await lockThrottle(tx);
    const keyed = attemptKeys({ username, address, rows: await readRows(tx, { username, address }) });
    const audits = [];
    for (const step of planSettle({ username, succeeded, now, keyed })) {
      if ("delete" in step) await tx.delete(loginThrottle).where(eq(loginThrottle.key, step.key));
      else if ("audit" in step) {
        await tx.update(loginThrottle).set({ lockedUntil: step.lockedUntil }).where(eq(loginThrottle.key, step.key));
        audits.push(step.audit);
      } else await tx.update(loginThrottle).set({ failures: step.failures }).where(eq(loginThrottle.key, step.key));
    }
    // The audit chain's lock last (see appendAuditPg).
    for (const entry of audits) await appendAuditPg({ db: tx, entry });
  });
}

/** Forget a name's failures, in the caller's transaction. */
export async function clearUserThrottlePg({ db, username }: { db: PgGovernanceExecutor; username: string }): Promise<void> {
  await db.delete(loginThrottle).where(eq(loginThrottle.key, userThrottleKey(username)));
}
