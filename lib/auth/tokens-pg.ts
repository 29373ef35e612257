import { desc, eq, isNull, sql } from "drizzle-orm";
import type { z } from "zod";
import { sha256Hex } from "../common";
import { PG_LOCK, type PgGovernanceExecutor } from "../db/pg";
import { storeNamesInPg } from "../db/pg-store";
import { apiTokens } from "../db/schema/pg/governance";
import { AppError } from "../errors";
import { appendAuditPg } from "../governance/audit-pg";
import {
  assertStoresUsable,
  bootstrapOrMalformed,
  createTokenSchema,
  firstFreeLabel,
  LAST_USED_GRANULARITY_MS,
  newTokenRow,
  newTokenSecret,
  principalOf,
  toInfo,
  tokenCreatedAudit,
  tokenRevokedAudit,
  type AgentPrincipal,
  type TokenInfo,
} from "./tokens";

/**
 * API tokens on PostgreSQL (the SQLite twin is ./tokens.ts, whose schema,
 * label rule, audit rows and principal this reuses). A bearer token is
 * looked up by its sha256 on the unique index on every request, so a
 * revocation on any replica counts at once on all of them.
 */
export async function createApiTokenPg({ db, input, actor }: { db: PgGovernanceExecutor; input: z.input<typeof createTokenSchema>; actor: string }): Promise<{ token: string; info: TokenInfo }> {
  const parsed = createTokenSchema.parse(input);
  // The stores in PostgreSQL, not DATA_DIR's: a read-only token for a store agents use there is not a typo.
  assertStoresUsable(parsed, await storeNamesInPg(db));
  const token = newTokenSecret();
  const row = await db.transaction(async (tx) => {
    // Two creates with one label on two replicas would both find it free: they take turns here.
    await tx.execute(sql`select pg_advisory_xact_lock(${PG_LOCK.tokenLabels})`);
    const active = await tx.select({ label: apiTokens.label }).from(apiTokens).where(isNull(apiTokens.revokedAt));
    const [inserted] = await tx
      .insert(apiTokens)
      .values(newTokenRow({ token, parsed, label: firstFreeLabel(parsed.label, active.map((r) => r.label)), actor }))
      .returning();
    await appendAuditPg({ db: tx, entry: tokenCreatedAudit(inserted, parsed, actor) });
    return inserted;
  });
  return { token, info: toInfo(row) };
}

export async function listApiTokensPg({ db }: { db: PgGovernanceExecutor }): Promise<TokenInfo[]> {
  return (await db.select().from(apiTokens).orderBy(desc(apiTokens.id))).map(toInfo);
}

export async function revokeApiTokenPg({ db, id, actor, reason }: { db: PgGovernanceExecutor; id: number; actor: string; reason?: string }): Promise<TokenInfo> {
  return db.transaction(async (tx) => {
    const [row] = await tx.select().from(apiTokens).where(eq(apiTokens.id, id)).for("update");
    if (!row) throw new AppError("not_found", `no token ${id}`);
    if (row.revokedAt) return toInfo(row);
    const [updated] = await tx.update(apiTokens).set({ revokedAt: Date.now() }).where(eq(apiTokens.id, id)).returning();
    await appendAuditPg({ db: tx, entry: tokenRevokedAudit(id, actor, reason) });
    return toInfo(updated);
  });
}

/** Resolve a bearer token to its principal, or null when unknown or revoked. */
export async function verifyApiTokenPg({ db, token }: { db: PgGovernanceExecutor; token: string }): Promise<AgentPrincipal | null> {
  const early = bootstrapOrMalformed(token);
  if (early !== undefined) return early;
  const [row] = await db.select().from(apiTokens).where(eq(apiTokens.tokenHash, sha256Hex(token)));
  if (!row || row.revokedAt) return null;
  const now = Date.now();
  if (!row.lastUsedAt || now - row.lastUsedAt > LAST_USED_GRANULARITY_MS) {
    await db.update(apiTokens).set({ lastUsedAt: now }).where(eq(apiTokens.id, row.id));
  }
  return principalOf(row);
}
