import { and, asc, count, eq, isNull, sql } from "drizzle-orm";
import { PG_LOCK, type PgGovernanceExecutor } from "../db/pg";
import { users } from "../db/schema/pg/governance";
import { AppError } from "../errors";
import { appendAuditPg } from "../governance/audit-pg";
import { clearUserThrottlePg } from "./login-throttle-pg";
import {
  assertUserFound,
  checkDisabledChange,
  checkRoleChange,
  disabledChange,
  passwordResetAudit,
  roleChangedAudit,
  toPublic,
  userCreatedAudit,
  type PublicUser,
  type Role,
} from "./users";
import type { User } from "../db/schema/governance";

/**
 * Dashboard users on PostgreSQL (the SQLite twin, the roles, schemas and
 * change rules are in ./users.ts). Changes that read before they write (a
 * free name, the admins left) take one advisory lock, so two replicas cannot
 * both demote "the other" admin; each change and its audit row commit together.
 */
async function lockUsers(tx: PgGovernanceExecutor): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${PG_LOCK.users})`);
}

const bumpSessionVersion = sql`${users.sessionVersion} + 1`;

export async function countUsersPg({ db }: { db: PgGovernanceExecutor }): Promise<number> {
  const [row] = await db.select({ n: count() }).from(users);
  return row.n;
}

/** With the password hash: for the credentials check only. */
export async function getUserByUsernamePg({ db, username }: { db: PgGovernanceExecutor; username: string }): Promise<User | undefined> {
  const [row] = await db.select().from(users).where(eq(users.username, username));
  return row;
}

export async function getUserByIdPg({ db, id }: { db: PgGovernanceExecutor; id: number }): Promise<PublicUser | undefined> {
  const [row] = await db.select().from(users).where(eq(users.id, id));
  return row ? toPublic(row) : undefined;
}

export async function listUsersPg({ db }: { db: PgGovernanceExecutor }): Promise<PublicUser[]> {
  return (await db.select().from(users).orderBy(asc(users.username))).map(toPublic);
}

export async function insertUserPg({ db, username, passwordHash, role, actor }: { db: PgGovernanceExecutor; username: string; passwordHash: string; role: Role; actor: string }): Promise<PublicUser> {
  return db.transaction(async (tx) => {
    await lockUsers(tx);
    if (await getUserByUsernamePg({ db: tx, username })) throw new AppError("conflict", `user ${username} already exists`);
    const now = Date.now();
    const [row] = await tx.insert(users).values({ username, passwordHash, role, createdAt: now, updatedAt: now }).returning();
    await appendAuditPg({ db: tx, entry: userCreatedAudit({ username, role, actor }) });
    return toPublic(row);
  });
}

export async function setUserPasswordHashPg({ db, username, passwordHash, actor }: { db: PgGovernanceExecutor; username: string; passwordHash: string; actor: string }): Promise<void> {
  await db.transaction(async (tx) => {
    const changed = await tx.update(users).set({ passwordHash, updatedAt: Date.now(), sessionVersion: bumpSessionVersion }).where(eq(users.username, username)).returning({ id: users.id });
    if (changed.length === 0) throw new AppError("not_found", `no user ${username}`);
    await clearUserThrottlePg({ db: tx, username });
    await appendAuditPg({ db: tx, entry: passwordResetAudit({ username, actor }) });
  });
}

async function countActiveAdminsPg(tx: PgGovernanceExecutor): Promise<number> {
  const [row] = await tx.select({ n: count() }).from(users).where(and(isNull(users.disabledAt), eq(users.role, "admin")));
  return row.n;
}

export async function setUserRolePg({ db, username, role, actor }: { db: PgGovernanceExecutor; username: string; role: Role; actor: string }): Promise<void> {
  await db.transaction(async (tx) => {
    await lockUsers(tx);
    const user = await getUserByUsernamePg({ db: tx, username });
    assertUserFound(user, username);
    if (!checkRoleChange({ user, role, activeAdmins: await countActiveAdminsPg(tx) })) return;
    await tx.update(users).set({ role, updatedAt: Date.now(), sessionVersion: bumpSessionVersion }).where(eq(users.id, user.id));
    await appendAuditPg({ db: tx, entry: roleChangedAudit({ username, from: user.role, to: role, actor }) });
  });
}

export async function setUserDisabledPg({ db, username, disabled, actor }: { db: PgGovernanceExecutor; username: string; disabled: boolean; actor: string }): Promise<PublicUser> {
  return db.transaction(async (tx) => {
    await lockUsers(tx);
    const user = await getUserByUsernamePg({ db: tx, username });
    assertUserFound(user, username);
    if (!checkDisabledChange({ user, disabled, activeAdmins: await countActiveAdminsPg(tx) })) return toPublic(user);
    const { set, audit } = disabledChange({ username, disabled, actor, now: Date.now() });
    const [updated] = await tx
      .update(users)
      .set({ disabledAt: set.disabledAt, updatedAt: set.updatedAt, ...(set.bumpSession ? { sessionVersion: bumpSessionVersion } : {}) })
      .where(eq(users.id, user.id))
      .returning();
    if (!disabled) await clearUserThrottlePg({ db: tx, username });
    await appendAuditPg({ db: tx, entry: audit });
    return toPublic(updated);
  });
}
