import { asc, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import { getGovernance } from "../db/connection";
import { users, type User } from "../db/schema/governance";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { beginSignInAttempt, clearUserThrottle, settleSignInAttempt } from "./login-throttle";
import { generatePassword, hashPassword, hashPasswordBeforeServing, verifyPassword } from "./passwords";

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

function toPublic(u: User): PublicUser {
  const { passwordHash: _omit, ...rest } = u;
  void _omit;
  return rest;
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

function insertUser({ username, passwordHash, role, actor }: { username: string; passwordHash: string; role: Role; actor: string }): PublicUser {
  const { sqlite, db } = getGovernance();
  return sqlite.transaction(() => {
    if (getUserByUsername({ username })) throw new AppError("conflict", `user ${username} already exists`);
    const now = Date.now();
    const row = db.insert(users).values({ username, passwordHash, role, createdAt: now, updatedAt: now }).returning().get();
    appendAudit({ actor, action: "user.create", target: `user:${username}`, details: { role } });
    return toPublic(row);
  }).immediate();
}

export async function createUser({ input, actor }: { input: z.input<typeof createUserSchema>; actor: string }): Promise<PublicUser> {
  const { username, password, role } = createUserSchema.parse(input);
  // Hashed before the transaction: scrypt must not hold the write lock.
  return insertUser({ username, passwordHash: await hashPassword(password), role, actor });
}

/**
 * Each change below that should end a person's sessions bumps
 * session_version in the same transaction as the change and its audit row:
 * a session JWT carries the version it was issued with (`sv`) and
 * resolveSessionUser refuses any other.
 */
const bumpSessionVersion = sql`${users.sessionVersion} + 1`;

/** New password: audited, every session of the user ends, their failed sign-ins are forgotten. */
export async function setUserPassword({ username, password, actor }: { username: string; password: string; actor: string }): Promise<void> {
  passwordSchema.parse(password);
  const passwordHash = await hashPassword(password);
  const { sqlite, db } = getGovernance();
  sqlite.transaction(() => {
    const res = db.update(users).set({ passwordHash, updatedAt: Date.now(), sessionVersion: bumpSessionVersion }).where(eq(users.username, username)).run();
    if (res.changes === 0) throw new AppError("not_found", `no user ${username}`);
    clearUserThrottle({ username });
    appendAudit({ actor, action: "user.password_reset", target: `user:${username}`, details: { sessions_revoked: true } });
  }).immediate();
}

/** New role: audited and every session of the user ends (so no page keeps a stale role). Setting the same role changes nothing. */
export function setUserRole({ username, role, actor }: { username: string; role: Role; actor: string }): void {
  const { sqlite, db } = getGovernance();
  sqlite.transaction(() => {
    const user = getUserByUsername({ username });
    if (!user) throw new AppError("not_found", `no user ${username}`);
    if (user.role === role) return;
    if (user.role === "admin" && !user.disabledAt && countActiveAdmins() <= 1) {
      throw new AppError("conflict", "cannot demote the last admin");
    }
    db.update(users).set({ role, updatedAt: Date.now(), sessionVersion: bumpSessionVersion }).where(eq(users.id, user.id)).run();
    appendAudit({ actor, action: "user.role", target: `user:${username}`, details: { from: user.role, to: role, sessions_revoked: true } });
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
    if (!user) throw new AppError("not_found", `no user ${username}`);
    if (!!user.disabledAt === disabled) return toPublic(user);
    if (disabled && user.role === "admin" && countActiveAdmins() <= 1) {
      throw new AppError("conflict", "cannot disable the last active admin");
    }
    const now = Date.now();
    const updated = db
      .update(users)
      .set(disabled ? { disabledAt: now, updatedAt: now, sessionVersion: bumpSessionVersion } : { disabledAt: null, updatedAt: now })
      .where(eq(users.id, user.id))
      .returning()
      .get();
    if (!disabled) clearUserThrottle({ username });
    appendAudit({ actor, action: disabled ? "user.disable" : "user.enable", target: `user:${username}`, details: disabled ? { sessions_revoked: true } : null });
    return toPublic(updated);
  }).immediate();
}

function countActiveAdmins(): number {
  return getGovernance()
    .db.select()
    .from(users)
    .where(isNull(users.disabledAt))
    .all()
    .filter((u) => u.role === "admin").length;
}

// Verified when a name is unknown, so an unknown name costs the same scrypt as a known one.
// Started at load (off the event loop), so not even the first unknown name costs an extra hash.
const dummyHash: Promise<string> = hashPassword(generatePassword());

/**
 * The credentials check alone: null for a wrong password, an unknown name or
 * a disabled account, alike. Runs scrypt even for unknown names so timing
 * does not reveal them. Sign-in goes through signInWithPassword, which adds
 * the throttle.
 */
export async function authenticateUser({ username, password }: { username: string; password: string }): Promise<PublicUser | null> {
  const user = getUserByUsername({ username });
  const ok = await verifyPassword(password, user?.passwordHash ?? (await dummyHash));
  if (!user || !ok || user.disabledAt) return null;
  return toPublic(user);
}

export type SignInResult = { ok: true; user: PublicUser } | { ok: false; reason: "invalid" } | { ok: false; reason: "throttled"; retryAfterMs: number };

/**
 * A sign-in attempt: throttled per name and per client address (see
 * login-throttle.ts). A throttled attempt is refused before any scrypt runs,
 * with the same answer whether or not the name exists.
 */
export async function signInWithPassword({ username, password, address, now }: { username: string; password: string; address: string | null; now?: number }): Promise<SignInResult> {
  const gate = beginSignInAttempt({ username, address, now });
  if (!gate.allowed) return { ok: false, reason: "throttled", retryAfterMs: gate.retryAfterMs };
  const user = await authenticateUser({ username, password });
  settleSignInAttempt({ username, address, succeeded: !!user, now });
  return user ? { ok: true, user } : { ok: false, reason: "invalid" };
}

/**
 * First run: with no users, create `admin` with DUALMIND_ADMIN_PASSWORD or a
 * generated password that is returned (and printed once by the caller).
 */
export function ensureFirstAdmin({ configuredPassword }: { configuredPassword?: string }): { created: false } | { created: true; username: string; generatedPassword?: string } {
  if (countUsers() > 0) return { created: false };
  const password = configuredPassword ?? generatePassword();
  const { username, role } = createUserSchema.parse({ username: "admin", password, role: "admin" });
  insertUser({ username, passwordHash: hashPasswordBeforeServing(password), role, actor: "system" });
  return { created: true, username: "admin", generatedPassword: configuredPassword ? undefined : password };
}
