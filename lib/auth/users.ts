import { and, asc, count, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import { getGovernance } from "../db/connection";
import { users, type User } from "../db/schema/governance";
import { AppError } from "../errors";
import { appendAudit, type AuditEntry } from "../governance/audit";
import { clearUserThrottle } from "./login-throttle";

/**
 * Dashboard roles, lowest first. viewer: reads everything it may see.
 * editor: also writes memories, annotates reviews and rates recalls.
 * admin: also manages users, tokens and jobs.
 */
export const ROLES = ["viewer", "editor", "admin"] as const;
export type Role = (typeof ROLES)[number];

/** Whether a role includes everything `min` may do (roles are ordered). */
export function roleAtLeast(role: Role, min: Role): boolean {
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
 * The rules of a user change, shared by both dialects (the PostgreSQL twin of
 * the queries below is ./users-pg.ts; both sit behind governance(), and the
 * flows that hash passwords and sign people in are lib/backend/users.ts).
 * Each change that should end a person's sessions bumps session_version in
 * the same transaction as the change and its audit row: a session JWT
 * carries the version it was issued with (`sv`) and resolveSessionUser
 * refuses any other.
 */

export function userCreatedAudit({ username, role, actor }: { username: string; role: Role; actor: string }): AuditEntry {
  return { actor, action: "user.create", target: `user:${username}`, details: { role } };
}

export function passwordResetAudit({ username, actor }: { username: string; actor: string }): AuditEntry {
  return { actor, action: "user.password_reset", target: `user:${username}`, details: { sessions_revoked: true } };
}

export function assertUserFound(user: User | undefined, username: string): asserts user is User {
  if (!user) throw new AppError("not_found", `no user ${username}`);
}

/** Whether a role change changes anything (false: the same role); throws for the last admin. */
export function checkRoleChange({ user, role, activeAdmins }: { user: User; role: Role; activeAdmins: number }): boolean {
  if (user.role === role) return false;
  if (user.role === "admin" && !user.disabledAt && activeAdmins <= 1) throw new AppError("conflict", "cannot demote the last admin");
  return true;
}

export function roleChangedAudit({ username, from, to, actor }: { username: string; from: Role; to: Role; actor: string }): AuditEntry {
  return { actor, action: "user.role", target: `user:${username}`, details: { from, to, sessions_revoked: true } };
}

/** Whether disabling/enabling changes anything (false: already so); throws for the last active admin. */
export function checkDisabledChange({ user, disabled, activeAdmins }: { user: User; disabled: boolean; activeAdmins: number }): boolean {
  if (!!user.disabledAt === disabled) return false;
  if (disabled && user.role === "admin" && activeAdmins <= 1) throw new AppError("conflict", "cannot disable the last active admin");
  return true;
}

/** The row change and audit entry of a disable (every session ends) or an enable. */
export function disabledChange({ username, disabled, actor, now }: { username: string; disabled: boolean; actor: string; now: number }): { set: { disabledAt: number | null; updatedAt: number; bumpSession: boolean }; audit: AuditEntry } {
  return {
    set: { disabledAt: disabled ? now : null, updatedAt: now, bumpSession: disabled },
    audit: { actor, action: disabled ? "user.disable" : "user.enable", target: `user:${username}`, details: disabled ? { sessions_revoked: true } : null },
  };
}

export function countUsers(): number {
  const { sqlite } = getGovernance();
  return (sqlite.prepare("select count(*) as n from users").get() as { n: number }).n;
}

export function getUserByUsername({ username }: { username: string }): User | undefined {
  return getGovernance().db.select().from(users).where(eq(users.username, username)).get();
}

export function getUserById({ id }: { id: number }): PublicUser | undefined {
  const u = getGovernance().db.select().from(users).where(eq(users.id, id)).get();
  return u ? toPublic(u) : undefined;
}

export function listUsers(): PublicUser[] {
  return getGovernance().db.select().from(users).orderBy(asc(users.username)).all().map(toPublic);
}

/** A new user from an already hashed password (scrypt must not hold the write lock); audited. */
export function insertUser({ username, passwordHash, role, actor }: { username: string; passwordHash: string; role: Role; actor: string }): PublicUser {
  const { sqlite, db } = getGovernance();
  return sqlite.transaction(() => {
    if (getUserByUsername({ username })) throw new AppError("conflict", `user ${username} already exists`);
    const now = Date.now();
    const row = db.insert(users).values({ username, passwordHash, role, createdAt: now, updatedAt: now }).returning().get();
    appendAudit(userCreatedAudit({ username, role, actor }));
    return toPublic(row);
  }).immediate();
}

const bumpSessionVersion = sql`${users.sessionVersion} + 1`;

/** New password (already hashed): audited, every session of the user ends, their failed sign-ins are forgotten. */
export function setUserPasswordHash({ username, passwordHash, actor }: { username: string; passwordHash: string; actor: string }): void {
  const { sqlite, db } = getGovernance();
  sqlite.transaction(() => {
    const res = db.update(users).set({ passwordHash, updatedAt: Date.now(), sessionVersion: bumpSessionVersion }).where(eq(users.username, username)).run();
    if (res.changes === 0) throw new AppError("not_found", `no user ${username}`);
    clearUserThrottle({ username });
    appendAudit(passwordResetAudit({ username, actor }));
  }).immediate();
}

/** New role: audited and every session of the user ends (so no page keeps a stale role). Setting the same role changes nothing. */
export function setUserRole({ username, role, actor }: { username: string; role: Role; actor: string }): void {
  const { sqlite, db } = getGovernance();
  sqlite.transaction(() => {
    const user = getUserByUsername({ username });
    assertUserFound(user, username);
    if (!checkRoleChange({ user, role, activeAdmins: countActiveAdmins() })) return;
    db.update(users).set({ role, updatedAt: Date.now(), sessionVersion: bumpSessionVersion }).where(eq(users.id, user.id)).run();
    appendAudit(roleChangedAudit({ username, from: user.role, to: role, actor }));
  }).immediate();
}

/**
 * Disable (sign-in refused, every session ends) or enable a user; audited.
 * The last active admin cannot be disabled. Asking for the state a user is
 * already in changes nothing. Returns the user as it now is.
 */
export function setUserDisabled({ username, disabled, actor }: { username: string; disabled: boolean; actor: string }): PublicUser {
  const { sqlite, db } = getGovernance();
  return sqlite.transaction(() => {
    const user = getUserByUsername({ username });
    assertUserFound(user, username);
    if (!checkDisabledChange({ user, disabled, activeAdmins: countActiveAdmins() })) return toPublic(user);
    const { set, audit } = disabledChange({ username, disabled, actor, now: Date.now() });
    const updated = db
      .update(users)
      .set({ disabledAt: set.disabledAt, updatedAt: set.updatedAt, ...(set.bumpSession ? { sessionVersion: bumpSessionVersion } : {}) })
      .where(eq(users.id, user.id))
      .returning()
      .get();
    if (!disabled) clearUserThrottle({ username });
    appendAudit(audit);
    return toPublic(updated);
  }).immediate();
}

function countActiveAdmins(): number {
  return getGovernance()
    .db.select({ n: count() })
    .from(users)
    .where(and(isNull(users.disabledAt), eq(users.role, "admin")))
    .get()!.n;
}
