import { generatePassword, hashPassword, hashPasswordBeforeServing, verifyPassword } from "../auth/passwords";
import { createUserSchema, passwordSchema, toPublic, type PublicUser } from "../auth/users";
import { AppError } from "../errors";
import { governance, type GovernanceBackend } from "./governance";

/**
 * Dashboard users and sign-in through governance(): on governance.db, or on
 * PostgreSQL with DATABASE_URL, where a user created on one replica signs in
 * on any other and the login throttle counts across all of them. The flows
 * (hashing outside any transaction, the throttle around the credentials
 * check, session versions) are written once here; the queries are the
 * backend's. `backend` defaults to this process's; tests pass one.
 */
type On = { backend?: GovernanceBackend };

export async function createUser({ input, actor, backend = governance() }: On & { input: unknown; actor: string }): Promise<PublicUser> {
  const { username, password, role } = createUserSchema.parse(input);
  // Hashed before the transaction: scrypt must not hold the write lock.
  return backend.insertUser({ username, passwordHash: await hashPassword(password), role, actor });
}

/** New password: audited, every session of the user ends, their failed sign-ins are forgotten. */
export async function setUserPassword({ username, password, actor, backend = governance() }: On & { username: string; password: string; actor: string }): Promise<void> {
  passwordSchema.parse(password);
  await backend.setUserPasswordHash({ username, passwordHash: await hashPassword(password), actor });
}

// Verified when a name is unknown, so an unknown name costs the same scrypt as a known one.
// Started at load (off the event loop), so not even the first unknown name costs an extra hash.
const dummyHash: Promise<string> = hashPassword(generatePassword());

/**
 * The password check, and whether the name is an account at all (for the throttle's audit, never for the answer):
 * no user for a wrong password, an unknown name or a disabled account, alike. Runs scrypt even for unknown names so
 * timing does not reveal them.
 */
async function checkPassword({ username, password, backend }: { username: string; password: string; backend: ReturnType<typeof governance> }): Promise<{ user: PublicUser | null; account: boolean }> {
  const user = await backend.getUserByUsername({ username });
  const ok = await verifyPassword({ password, stored: user?.passwordHash ?? (await dummyHash) });
  return { user: !user || !ok || user.disabledAt ? null : toPublic(user), account: !!user };
}

export type SignInResult = { ok: true; user: PublicUser } | { ok: false; reason: "invalid" } | { ok: false; reason: "throttled"; retryAfterMs: number };

/**
 * A sign-in attempt: throttled per name and per client address (see
 * lib/auth/login-throttle.ts). A throttled attempt is refused before any
 * scrypt runs, with the same answer whether or not the name exists.
 */
export async function signInWithPassword({ username, password, address, now, backend = governance() }: On & { username: string; password: string; address: string | null; now?: number }): Promise<SignInResult> {
  const gate = await backend.beginSignInAttempt({ username, address, now });
  if (!gate.allowed) return { ok: false, reason: "throttled", retryAfterMs: gate.retryAfterMs };
  const { user, account } = await checkPassword({ username, password, backend });
  await backend.settleSignInAttempt({ username, address, succeeded: !!user, account, now });
  return user ? { ok: true, user } : { ok: false, reason: "invalid" };
}

/** What a session JWT carries about its person (see callbacks in auth-options.ts). */
export type SessionClaims = { uid?: unknown; role?: unknown; sv?: unknown; name?: unknown };

/**
 * The person a session JWT stands for, re-read from the governance database:
 * null when the account is gone or disabled, or when the token was issued
 * before the user's session_version last moved (password reset, role change,
 * disable — see lib/auth/users.ts), which is how those changes end existing
 * sessions. A token without `sv` predates session versions and is refused
 * too. The token's username must match the row's: ids are reused when the
 * users table under a signing secret changes (an install moved to
 * PostgreSQL, `migrate-data --replace`), and a cookie issued for one person
 * must never become another person's session. The one check behind the
 * request-level gate (proxy.ts), every page loader and every server action.
 */
export async function resolveSessionUser({ claims, backend = governance() }: { claims: SessionClaims | null | undefined; backend?: GovernanceBackend }): Promise<PublicUser | null> {
  const id = claims?.uid;
  if (typeof id !== "number") return null;
  const user = await backend.getUserById({ id });
  if (!user || user.disabledAt || claims?.name !== user.username) return null;
  return claims?.sv === user.sessionVersion ? user : null;
}

export type FirstAdmin = { created: false } | { created: true; username: string; generatedPassword?: string };

/**
 * First run: with no users, create `admin` with DUALMIND_ADMIN_PASSWORD or a
 * generated password that is returned (and printed once by the caller).
 * Replicas starting together on one PostgreSQL: one creates it, the others
 * meet the taken name (a conflict) and report nothing created.
 */
export async function ensureFirstAdmin({ configuredPassword, backend = governance() }: On & { configuredPassword?: string }): Promise<FirstAdmin> {
  if ((await backend.countUsers({})) > 0) return { created: false };
  const password = configuredPassword ?? generatePassword();
  const { username, role } = createUserSchema.parse({ username: "admin", password, role: "admin" });
  try {
    await backend.insertUser({ username, passwordHash: hashPasswordBeforeServing(password), role, actor: "system" });
  } catch (e) {
    if (e instanceof AppError && e.code === "conflict") return { created: false };
    throw e;
  }
  return { created: true, username, generatedPassword: configuredPassword ? undefined : password };
}
