import { randomBytes, timingSafeEqual } from "node:crypto";
import { sha256Hex } from "../common";
import { desc, eq, isNull } from "drizzle-orm";
import { z } from "zod";
import { getConfig } from "../config";
import { getGovernance, STORE_NAME_RE } from "../db/connection";
import { preparedOnce } from "../db/statements";
import { apiTokens, type ApiTokenRow } from "../db/schema/governance";
import { listStoreNames } from "../db/store-names";
import { AppError } from "../errors";
import { appendAudit, type AuditEntry } from "../governance/audit";

export const SCOPES = ["read", "write", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

/** What a verified bearer token lets its agent do. */
export type AgentPrincipal = {
  tokenId: number | null;
  agentId: string;
  label: string;
  scopes: Scope[];
  /** null = every store */
  stores: string[] | null;
};

export const createTokenSchema = z
  .object({
    label: z.string().trim().min(1).max(100),
    agent_id: z.string().trim().min(1).max(100).regex(/^[A-Za-z0-9._:@-]+$/, "letters, digits and . _ : @ - only"),
    scopes: z.array(z.enum(SCOPES)).min(1).max(3),
    stores: z.array(z.string().regex(STORE_NAME_RE, "invalid store name")).min(1).max(100).nullable().optional(),
  })
  .strict();
export type CreateTokenInput = z.infer<typeof createTokenSchema>;

export type TokenInfo = {
  id: number;
  label: string;
  agentId: string;
  scopes: Scope[];
  stores: string[] | null;
  displayPrefix: string;
  createdBy: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
};

export function toInfo(row: ApiTokenRow): TokenInfo {
  return {
    id: row.id,
    label: row.label,
    agentId: row.agentId,
    scopes: JSON.parse(row.scopes) as Scope[],
    stores: row.stores ? (JSON.parse(row.stores) as string[]) : null,
    displayPrefix: row.displayPrefix,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  };
}

/** The stores in an allow-list that do not exist (yet) among `existing` (the backend's stores: local SQLite, or PostgreSQL with DATABASE_URL). */
export function missingStores(stores: string[] | null | undefined, existing: readonly string[]): string[] {
  return [...new Set(stores ?? [])].filter((s) => !existing.includes(s));
}

/**
 * A store in the allow-list must exist unless the token may create it: a
 * write or admin token can (POST /stores, within its list), so naming a store
 * it will make is fine; a read-only token never could, so a store that does
 * not exist is a typo and is refused (422, naming it).
 */
export function assertStoresUsable(parsed: CreateTokenInput, existing: readonly string[]): void {
  if (parsed.scopes.some((s) => s !== "read")) return;
  const missing = missingStores(parsed.stores, existing);
  if (missing.length === 0) return;
  const message = `no such store${missing.length === 1 ? "" : "s"}: ${missing.join(", ")} (a read-only token cannot create it)`;
  throw new AppError("unprocessable", message, [{ path: "stores", message }]);
}

/**
 * The label itself when no active token carries it, else the first free
 * "label (2)", "label (3)", …: two tokens that read the same in the Admin
 * table could not be told apart when one has to be revoked.
 */
function distinctLabel(label: string): string {
  return firstFreeLabel(
    label,
    getGovernance()
      .db.select({ label: apiTokens.label })
      .from(apiTokens)
      .where(isNull(apiTokens.revokedAt))
      .all()
      .map((r) => r.label),
  );
}

/** `label`, or the first "label (n)" no active token carries (case-insensitive). Both backends. */
export function firstFreeLabel(label: string, activeLabels: string[]): string {
  const taken = new Set(activeLabels.map((l) => l.toLowerCase()));
  if (!taken.has(label.toLowerCase())) return label;
  for (let n = 2; ; n++) {
    const candidate = `${label.slice(0, 100 - ` (${n})`.length)} (${n})`;
    if (!taken.has(candidate.toLowerCase())) return candidate;
  }
}

/**
 * Create a token. The plaintext is returned once and never stored. A
 * read-only token's stores must exist (422), and a label an active token
 * already has gets a number (`info.label` says which).
 */
export function createApiToken({ input, actor }: { input: z.input<typeof createTokenSchema>; actor: string }): { token: string; info: TokenInfo } {
  const parsed = createTokenSchema.parse(input);
  assertStoresUsable(parsed, listStoreNames());
  const token = newTokenSecret();
  const { sqlite, db } = getGovernance();
  const row = sqlite.transaction(() => {
    const inserted = db.insert(apiTokens).values(newTokenRow({ token, parsed, label: distinctLabel(parsed.label), actor })).returning().get();
    appendAudit(tokenCreatedAudit(inserted, parsed, actor));
    return inserted;
  }).immediate();
  return { token, info: toInfo(row) };
}

export function newTokenSecret(): string {
  return "dm_" + randomBytes(32).toString("base64url");
}

/** The stored row of a new token: its hash, never the token (both backends). */
export function newTokenRow({ token, parsed, label, actor }: { token: string; parsed: CreateTokenInput; label: string; actor: string }) {
  return {
    tokenHash: sha256Hex(token),
    displayPrefix: token.slice(0, 10),
    label,
    agentId: parsed.agent_id,
    scopes: JSON.stringify([...new Set(parsed.scopes)]),
    stores: parsed.stores ? JSON.stringify([...new Set(parsed.stores)]) : null,
    createdBy: actor,
    createdAt: Date.now(),
  };
}

export function tokenCreatedAudit(row: Pick<ApiTokenRow, "id" | "label">, parsed: CreateTokenInput, actor: string): AuditEntry {
  return { actor, action: "token.create", target: `token:${row.id}`, details: { label: row.label, agent_id: parsed.agent_id, scopes: parsed.scopes, stores: parsed.stores ?? null } };
}

export function tokenRevokedAudit(id: number, actor: string, reason: string | undefined): AuditEntry {
  return { actor, action: "token.revoke", target: `token:${id}`, reason: reason ?? null };
}

export function listApiTokens(): TokenInfo[] {
  return getGovernance().db.select().from(apiTokens).orderBy(desc(apiTokens.id)).all().map(toInfo);
}

export function revokeApiToken({ id, actor, reason }: { id: number; actor: string; reason?: string }): TokenInfo {
  const { sqlite, db } = getGovernance();
  return sqlite.transaction(() => {
    const row = db.select().from(apiTokens).where(eq(apiTokens.id, id)).get();
    if (!row) throw new AppError("not_found", `no token ${id}`);
    if (row.revokedAt) return toInfo(row);
    const updated = db.update(apiTokens).set({ revokedAt: Date.now() }).where(eq(apiTokens.id, id)).returning().get();
    appendAudit(tokenRevokedAudit(id, actor, reason));
    return toInfo(updated);
  }).immediate();
}

// last_used_at is written at most once a minute per token so reads stay read-only in practice.
export const LAST_USED_GRANULARITY_MS = 60_000;

let bootstrapMemo: { token: string; hash: Buffer } | null = null;
/** The configured bootstrap token's hash, computed once per value (the config can change under tests). */
function bootstrapHash(token: string): Buffer {
  if (bootstrapMemo?.token !== token) bootstrapMemo = { token, hash: Buffer.from(sha256Hex(token)) };
  return bootstrapMemo.hash;
}

/** Resolve a bearer token to its principal, or null when unknown or revoked. */
export function verifyApiToken(token: string): AgentPrincipal | null {
  const early = bootstrapOrMalformed(token);
  if (early !== undefined) return early;
  const { sqlite, db } = getGovernance();
  // Looked up on every request (a revocation, from any process, counts at once); the statement is prepared once per connection.
  const row = preparedOnce(sqlite, "select id, agent_id as agentId, label, scopes, stores, last_used_at as lastUsedAt, revoked_at as revokedAt from api_tokens where token_hash = ?").get(sha256Hex(token)) as
    | Pick<ApiTokenRow, "id" | "agentId" | "label" | "scopes" | "stores" | "lastUsedAt" | "revokedAt">
    | undefined;
  if (!row || row.revokedAt) return null;
  const now = Date.now();
  if (!row.lastUsedAt || now - row.lastUsedAt > LAST_USED_GRANULARITY_MS) {
    db.update(apiTokens).set({ lastUsedAt: now }).where(eq(apiTokens.id, row.id)).run();
  }
  return principalOf(row);
}

/**
 * Answered before any lookup (both backends): the bootstrap token's
 * principal, null for a string that is no dualmind token, undefined to look it up by hash.
 */
export function bootstrapOrMalformed(token: string): AgentPrincipal | null | undefined {
  const bootstrap = getConfig().bootstrapToken;
  if (bootstrap) {
    const a = Buffer.from(sha256Hex(token));
    const b = bootstrapHash(bootstrap);
    if (timingSafeEqual(a, b)) {
      return { tokenId: null, agentId: "bootstrap", label: "DUALMIND_BOOTSTRAP_TOKEN", scopes: ["read", "write", "admin"], stores: null };
    }
  }
  return token.startsWith("dm_") ? undefined : null;
}

export function principalOf(row: Pick<ApiTokenRow, "id" | "agentId" | "label" | "scopes" | "stores">): AgentPrincipal {
  return { tokenId: row.id, agentId: row.agentId, label: row.label, scopes: JSON.parse(row.scopes) as Scope[], stores: row.stores ? (JSON.parse(row.stores) as string[]) : null };
}

/** admin implies write implies read. */
export function hasScope(principal: AgentPrincipal, needed: Scope): boolean {
  const rank: Record<Scope, number> = { read: 0, write: 1, admin: 2 };
  return principal.scopes.some((s) => rank[s] >= rank[needed]);
}

export function canUseStore(principal: AgentPrincipal, store: string): boolean {
  return principal.stores === null || principal.stores.includes(store);
}

/** 403 unless the token may use every one of `stores` (the stores a request touches: path, include_core, store fields). */
export function assertStoresAllowed(principal: AgentPrincipal, stores: Iterable<string>): void {
  for (const store of stores) {
    if (!canUseStore(principal, store)) throw new AppError("forbidden", `this token may not use store ${store}`);
  }
}

/**
 * Admin over everything: the admin scope on a token not limited to some
 * stores. Tokens, the task ledger and dialectic sessions belong to no store
 * and are keyed by agent id, so a store-limited admin is an admin of its
 * stores only (reindex, re-embed, settings, their jobs), never of these.
 */
export function isUnrestrictedAdmin(principal: AgentPrincipal): boolean {
  return principal.stores === null && hasScope(principal, "admin");
}
