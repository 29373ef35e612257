import net from "node:net";
import { eq, and, inArray, isNull, lt, or, type AnyColumn, type SQL } from "drizzle-orm";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { PG_LOCK } from "../db/pg";
import { ledgerLock, remove, rows, update, upsert, writeLedger, type LedgerHandle, type Op, type OnLedger } from "../db/port";
import type { LoginThrottleRow } from "../db/schema/governance";
import { auditStep, type AuditEntry } from "../governance/audit";
import { ledgerTables } from "../governance/tables";

const loginThrottle = ledgerTables.loginThrottle;

/**
 * Failed sign-ins per user name and per client address, in the governance
 * database so every server sees the same counts; the policy is SECURITY.md's
 * "Sign-in". An attempt is charged before its password is checked, so a
 * parallel burst cannot all pass the gate while scrypt runs; a refused
 * attempt runs no scrypt and changes nothing. Every gate and settle is one
 * write under the throttle lock (never held across scrypt), so replicas take
 * turns exactly as under SQLite's write lock.
 */
export type ThrottlePolicy = { freeFailures: number; lockAfterFailures: number; firstDelayMs: number; lockMs: number };

const MINUTE = 60_000;
/** Per user name: 5 free failures, then 30 s, 1, 2, 4, 8 min; the 10th failure locks it for 15 min. */
export const USER_THROTTLE: ThrottlePolicy = { freeFailures: 5, lockAfterFailures: 10, firstDelayMs: 30_000, lockMs: 15 * MINUTE };
/** Per client address (several people may share one): 20 free failures across all names, locked at 30. */
export const ADDRESS_THROTTLE: ThrottlePolicy = { freeFailures: 20, lockAfterFailures: 30, firstDelayMs: 30_000, lockMs: 15 * MINUTE };
/** A key with no failure for this long (and no lock running) starts again from zero. */
export const FAILURE_MEMORY_MS = 60 * MINUTE;

export type SignInGate = { allowed: true } | { allowed: false; retryAfterMs: number };

type Keyed = { key: string; policy: ThrottlePolicy };

function keysFor({ username, address }: { username: string; address: string | null }): Keyed[] {
  const keys: Keyed[] = [{ key: userKey(username), policy: USER_THROTTLE }];
  if (address) keys.push({ key: `ip:${address}`, policy: ADDRESS_THROTTLE });
  return keys;
}

function userKey(username: string): string {
  return `user:${username}`;
}

function isForgotten(row: LoginThrottleRow, now: number): boolean {
  return row.lastFailureAt <= now - FAILURE_MEMORY_MS && !(row.lockedUntil !== null && row.lockedUntil > now);
}

/** The first moment this key may try again (≤ now: it may try now). */
function notBefore(row: LoginThrottleRow, policy: ThrottlePolicy): number {
  let until = row.lockedUntil ?? 0;
  if (row.failures >= policy.freeFailures) {
    const delay = Math.min(policy.firstDelayMs * 2 ** (row.failures - policy.freeFailures), policy.lockMs);
    until = Math.max(until, row.lastFailureAt + delay);
  }
  return until;
}

export type ThrottleKeyed = Keyed & { row: LoginThrottleRow | undefined };

/**
 * The keys of an attempt (its name, and its address when known) with their
 * rows out of `rows`; with `forgetAt`, a row forgotten by then reads as absent.
 */
export function attemptKeys({ username, address, rows, forgetAt }: { username: string; address: string | null; rows: LoginThrottleRow[]; forgetAt?: number }): ThrottleKeyed[] {
  return keysFor({ username, address }).map((k) => {
    const row = rows.find((r) => r.key === k.key);
    return { ...k, row: row && (forgetAt === undefined || !isForgotten(row, forgetAt)) ? row : undefined };
  });
}

let lastPrunedAt = 0;

/** The condition of a forgotten row, for the prune. */
function forgottenBy(table: { lastFailureAt: AnyColumn; lockedUntil: AnyColumn }, now: number): SQL | undefined {
  return and(lt(table.lastFailureAt, now - FAILURE_MEMORY_MS), or(isNull(table.lockedUntil), lt(table.lockedUntil, now)));
}

/** Whether this process should drop forgotten keys now: at most once a minute, so names sprayed at the form do not pile up. */
function pruneDue(now: number): boolean {
  if (now - lastPrunedAt < MINUTE) return false;
  lastPrunedAt = now;
  return true;
}

function readRows(keys: { username: string; address: string | null }): Op<LoginThrottleRow[]> {
  const names = keysFor(keys).map((k) => k.key);
  return rows(loginThrottle, { where: (t) => inArray(t.key, names) });
}

type Handle<H> = { handle?: H };

/**
 * Before checking a password: refuse (with how long to wait) while the name
 * or the address is delayed or locked, else charge one failure to each.
 */
export function beginSignInAttempt<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, username, address, now = Date.now() }: Handle<H> & { username: string; address: string | null; now?: number }): OnLedger<H, SignInGate> {
  return writeLedger(handle, function* () {
    yield* ledgerLock(PG_LOCK.loginThrottle);
    if (pruneDue(now)) yield* remove(loginThrottle, (t) => forgottenBy(t, now));
    const keyed = attemptKeys({ username, address, rows: yield* readRows({ username, address }), forgetAt: now });
    const until = Math.max(0, ...keyed.map((k) => (k.row ? notBefore(k.row, k.policy) : 0)));
    if (until > now) return { allowed: false, retryAfterMs: until - now };
    for (const { key, row } of keyed) {
      const values = { key, failures: (row?.failures ?? 0) + 1, firstFailureAt: row?.firstFailureAt ?? now, lastFailureAt: now, lockedUntil: null };
      yield* upsert(loginThrottle, values, (t) => t.key, values);
    }
    return { allowed: true };
  });
}

/**
 * After checking the password. A failure keeps its charge and locks a key
 * that has reached its limit (audited once per lock). A success clears the
 * name and gives the address its charge back.
 */
export function settleSignInAttempt<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, username, address, succeeded, account = true, now = Date.now() }: Handle<H> & { username: string; address: string | null; succeeded: boolean; account?: boolean; now?: number }): OnLedger<H, void> {
  return writeLedger(handle, function* () {
    yield* ledgerLock(PG_LOCK.loginThrottle);
    const keyed = attemptKeys({ username, address, rows: yield* readRows({ username, address }) });
    const audits: AuditEntry[] = [];
    for (const { key, policy, row } of keyed) {
      if (!row) continue;
      if (succeeded) {
        if (key === userKey(username) || row.failures <= 1) yield* remove(loginThrottle, (t) => eq(t.key, key));
        else yield* update(loginThrottle, { failures: row.failures - 1 }, (t) => eq(t.key, key));
        continue;
      }
      const locked = row.lockedUntil !== null && row.lockedUntil > now;
      if (row.failures < policy.lockAfterFailures || locked) continue;
      const lockedUntil = now + policy.lockMs;
      yield* update(loginThrottle, { lockedUntil }, (t) => eq(t.key, key));
      // A name that is no account is locked like any other (the answer must not tell them apart) but not audited:
      // names sprayed at the form would otherwise grow the audit log for ever. The address's lock is audited either way.
      if (key === userKey(username) && !account) continue;
      audits.push({ actor: "system", action: "auth.lockout", target: key, reason: `${row.failures} failed sign-ins`, details: { failures: row.failures, first_failure_at: row.firstFailureAt, locked_until: lockedUntil } });
    }
    // The audit chain's lock last (see appendAuditPg).
    for (const entry of audits) yield* auditStep(entry);
  });
}

/** Forget a name's failures (a new password or re-enabled account starts clean), as a step of the caller's write. */
export function* clearUserThrottle({ username }: { username: string }): Op<void> {
  yield* remove(loginThrottle, (t) => eq(t.key, userKey(username)));
}

/**
 * The client's address for the per-address limit, from X-Forwarded-For: the
 * entry `trustProxyHops` places from the right (each trusted proxy appends
 * the address it saw), or null when no proxy is trusted.
 *
 * Why null without a proxy: next-auth 4 hands authorize() headers only, and
 * Next.js fills X-Forwarded-For with the connection's address only when the
 * client did not send one itself, so a direct client can make this value
 * anything: rotating it would dodge the limit and naming someone else's
 * address would lock them out. The per-name limit does not depend on it.
 */
export function clientAddress({ forwardedFor, trustProxyHops }: { forwardedFor: string | string[] | undefined; trustProxyHops: number }): string | null {
  if (trustProxyHops <= 0 || forwardedFor === undefined) return null;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor)
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
  if (hops.length === 0) return null;
  // Fewer entries than proxies: the request skipped a proxy, so even the leftmost is only what some hop claims.
  const picked = hops[Math.max(0, hops.length - trustProxyHops)];
  const address = picked.replace(/^\[(.*)\](?::\d+)?$/, "$1").replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "");
  // Anything but an IP address (a proxy that passes junk through) shares one bucket rather than minting keys.
  return net.isIP(address) ? address.toLowerCase() : "invalid";
}
