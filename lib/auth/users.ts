import { asc, eq, isNull } from "drizzle-orm";
import { z } from "zod";
import { getGovernance } from "../db/connection";
import { users, type User } from "../db/schema/governance";
import { AppError } from "../errors";
import { appendAudit } from "../governance/audit";
import { generatePassword, hashPassword, verifyPassword } from "./passwords";

export const ROLES = ["viewer", "admin"] as const;
export type Role = (typeof ROLES)[number];

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

export function createUser({ input, actor }: { input: z.input<typeof createUserSchema>; actor: string }): PublicUser {
  const { username, password, role } = createUserSchema.parse(input);
  const { sqlite, db } = getGovernance();
  return sqlite.transaction(() => {
    if (getUserByUsername({ username })) throw new AppError("conflict", `user ${username} already exists`);
    const now = Date.now();
    const row = db
      .insert(users)
      .values({ username, passwordHash: hashPassword(password), role, createdAt: now, updatedAt: now })
      .returning()
      .get();
    appendAudit({ actor, action: "user.create", target: `user:${username}`, details: { role } });
    return toPublic(row);
  }).immediate();
}

export function setUserPassword({ username, password, actor }: { username: string; password: string; actor: string }): void {
  passwordSchema.parse(password);
  const { sqlite, db } = getGovernance();
  sqlite.transaction(() => {
    const res = db
      .update(users)
      .set({ passwordHash: hashPassword(password), updatedAt: Date.now() })
      .where(eq(users.username, username))
      .run();
    if (res.changes === 0) throw new AppError("not_found", `no user ${username}`);
    appendAudit({ actor, action: "user.password_reset", target: `user:${username}` });
  }).immediate();
}

export function setUserRole({ username, role, actor }: { username: string; role: Role; actor: string }): void {
  const { sqlite, db } = getGovernance();
  sqlite.transaction(() => {
    const user = getUserByUsername({ username });
    if (!user) throw new AppError("not_found", `no user ${username}`);
    if (user.role === "admin" && role !== "admin" && countActiveAdmins() <= 1) {
      throw new AppError("conflict", "cannot demote the last admin");
    }
    db.update(users).set({ role, updatedAt: Date.now() }).where(eq(users.username, username)).run();
    appendAudit({ actor, action: "user.role", target: `user:${username}`, details: { from: user.role, to: role } });
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

/** Credentials check for sign-in. Runs scrypt even for unknown users so timing does not reveal names. */
export function authenticateUser({ username, password }: { username: string; password: string }): PublicUser | null {
  const user = getUserByUsername({ username });
  const ok = verifyPassword(password, user?.passwordHash ?? DUMMY_HASH);
  if (!user || !ok || user.disabledAt) return null;
  return toPublic(user);
}
const DUMMY_HASH = hashPassword(generatePassword());

/**
 * First run: with no users, create `admin` with DUALMIND_ADMIN_PASSWORD or a
 * generated password that is returned (and printed once by the caller).
 */
export function ensureFirstAdmin({ configuredPassword }: { configuredPassword?: string }): { created: false } | { created: true; username: string; generatedPassword?: string } {
  if (countUsers() > 0) return { created: false };
  const password = configuredPassword ?? generatePassword();
  createUser({ input: { username: "admin", password, role: "admin" }, actor: "system" });
  return { created: true, username: "admin", generatedPassword: configuredPassword ? undefined : password };
}
