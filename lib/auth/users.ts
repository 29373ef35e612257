import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { PG_LOCK } from "../db/pg";
import { count, insert, ledgerLock, readLedger, row, rows, update, writeLedger, type LedgerHandle, type Op, type OnLedger } from "../db/port";
import type { User } from "../db/schema/governance";
import { AppError } from "../errors";
import { auditStep } from "../governance/audit";
import { ledgerTables } from "../governance/tables";
import { clearUserThrottle } from "./login-throttle";

const users = ledgerTables.users;

/**
 * Dashboard roles, lowest first. viewer: reads everything it may see.
 * editor: also writes memories, annotates reviews and rates recalls.
 * admin: also manages users, tokens and jobs.
 */
export const ROLES = ["viewer", "editor", "admin"] as const;
export type Role = (typeof ROLES)[number];

/** Whether a role includes everything `min` may do (roles are ordered). */
export function roleAtLeast({ role, min }: { role: Role; min: Role }): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(min);
}

export const usernameSchema = z
  .string()
  .trim()
  .min(2)
  .max(64)
  .regex(/^[a-zA-Z0-9._@-]+$/, "letters, digits and . _ @ - only");
export const passwordSchema = z
  .string()
  .min(8, "at least 8 characters")
  .max(256)
  .refine((p) => !p.includes("\u0000"), "must not contain a NUL character");

export const createUserSchema = z
  .object({ username: usernameSchema, password: passwordSchema, role: z.enum(ROLES) })
  .strict();

export type PublicUser = Omit<User, "passwordHash">;

export function toPublic(u: User): PublicUser {
  const { passwordHash: _omit, ...rest } = u;
  void _omit;
  return rest;
}

/*
 * Dashboard users, one repository over governance.db and PostgreSQL
 * (lib/db/port.ts; behind governance(), and the flows that hash passwords
 * and sign people in are lib/backend/users.ts). Changes that read before
 * they write (a free name, the admins left) take the users lock, so two
 * replicas cannot both demote "the other" admin. Each change that should end a person's sessions bumps session_version in
 * the same transaction as the change and its audit row: a session JWT
 * carries the version it was issued with (`sv`) and resolveSessionUser
 * refuses any other.
 */

type Handle<H> = { handle?: H };

export function countUsers<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H }: Handle<H> = {}): OnLedger<H, number> {
  return readLedger(handle, count(users));
}

/** With the password hash: for the credentials check only. */
export function getUserByUsername<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, username }: Handle<H> & { username: string }): OnLedger<H, User | undefined> {
  return readLedger(handle, userByName(username));
}

function userByName(username: string): Op<User | undefined> {
  return row(users, (t) => eq(t.username, username));
}

export function getUserById<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, id }: Handle<H> & { id: number }): OnLedger<H, PublicUser | undefined> {
  return readLedger(handle, function* () {
    const u = yield* row(users, (t) => eq(t.id, id));
    return u ? toPublic(u) : undefined;
  });
}

export function listUsers<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H }: Handle<H> = {}): OnLedger<H, PublicUser[]> {
  return readLedger(handle, function* () {
    return (yield* rows(users, { orderBy: (t) => [asc(t.username)] })).map(toPublic);
  });
}

/** A new user from an already hashed password (scrypt must not hold the write lock); audited. */
export function insertUser<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, username, passwordHash, role, actor }: Handle<H> & { username: string; passwordHash: string; role: Role; actor: string }): OnLedger<H, PublicUser> {
  return writeLedger(handle, function* () {
    yield* ledgerLock(PG_LOCK.users);
    if (yield* userByName(username)) throw new AppError("conflict", `user ${username} already exists`);
    const now = Date.now();
    const created = yield* insert(users, { username, passwordHash, role, createdAt: now, updatedAt: now });
    yield* auditStep({ actor, action: "user.create", target: `user:${username}`, details: { role } });
    return toPublic(created);
  });
}

const bumpSessionVersion = sql`session_version + 1`;

/** New password (already hashed): audited, every session of the user ends, their failed sign-ins are forgotten. */
export function setUserPasswordHash<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, username, passwordHash, actor }: Handle<H> & { username: string; passwordHash: string; actor: string }): OnLedger<H, void> {
  return writeLedger(handle, function* () {
    const changed = yield* update(users, { passwordHash, updatedAt: Date.now(), sessionVersion: bumpSessionVersion }, (t) => eq(t.username, username));
    if (changed.length === 0) throw new AppError("not_found", `no user ${username}`);
    yield* clearUserThrottle({ username });
    yield* auditStep({ actor, action: "user.password_reset", target: `user:${username}`, details: { sessions_revoked: true } });
  });
}

/** New role: audited and every session of the user ends (so no page keeps a stale role). Setting the same role changes nothing. */
export function setUserRole<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, username, role, actor }: Handle<H> & { username: string; role: Role; actor: string }): OnLedger<H, void> {
  return writeLedger(handle, function* () {
    const user = yield* lockedUser(username);
    if (user.role === role) return;
    if (user.role === "admin" && !user.disabledAt && (yield* countActiveAdmins()) <= 1) throw new AppError("conflict", "cannot demote the last admin");
    yield* update(users, { role, updatedAt: Date.now(), sessionVersion: bumpSessionVersion }, (t) => eq(t.id, user.id));
    yield* auditStep({ actor, action: "user.role", target: `user:${username}`, details: { from: user.role, to: role, sessions_revoked: true } });
  });
}

/**
 * Disable (sign-in refused, every session ends) or enable a user; audited.
 * The last active admin cannot be disabled. Asking for the state a user is
 * already in changes nothing. Returns the user as it now is.
 */
export function setUserDisabled<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, username, disabled, actor }: Handle<H> & { username: string; disabled: boolean; actor: string }): OnLedger<H, PublicUser> {
  return writeLedger(handle, function* () {
    const user = yield* lockedUser(username);
    if (!!user.disabledAt === disabled) return toPublic(user);
    if (disabled && user.role === "admin" && (yield* countActiveAdmins()) <= 1) throw new AppError("conflict", "cannot disable the last active admin");
    const now = Date.now();
    // Disabling ends every session; enabling forgets the name's failed sign-ins.
    const [updated] = yield* update(users, { disabledAt: disabled ? now : null, updatedAt: now, ...(disabled ? { sessionVersion: bumpSessionVersion } : {}) }, (t) => eq(t.id, user.id));
    if (!disabled) yield* clearUserThrottle({ username });
    yield* auditStep({ actor, action: disabled ? "user.disable" : "user.enable", target: `user:${username}`, details: disabled ? { sessions_revoked: true } : null });
    return toPublic(updated);
  });
}

/** The user a change that checks the admins left reads, under the users lock; 404 when unknown. */
function* lockedUser(username: string): Op<User> {
  yield* ledgerLock(PG_LOCK.users);
  const user = yield* userByName(username);
  if (!user) throw new AppError("not_found", `no user ${username}`);
  return user;
}

function countActiveAdmins(): Op<number> {
  return count(users, (t) => and(isNull(t.disabledAt), eq(t.role, "admin")));
}
