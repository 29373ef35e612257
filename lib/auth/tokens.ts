import { randomBytes, timingSafeEqual } from "node:crypto";
import { sha256Hex } from "../common";
import { desc, eq, isNull } from "drizzle-orm";
import { z } from "zod";
import { getConfig } from "../config";
import { getGovernance, STORE_NAME_RE, type GovernanceHandle } from "../db/connection";
import { PG_LOCK } from "../db/pg";
import { storeNamesInPg } from "../db/pg-store";
import { engineStep, insert, ledgerLock, readLedger, row, rows, update, writeLedger, type LedgerHandle, type Op, type OnLedger } from "../db/port";
import { preparedOnce } from "../db/statements";
import type { ApiTokenRow } from "../db/schema/governance";
import { listStoreNames } from "../db/store-names";
import { AppError } from "../errors";
import { auditStep } from "../governance/audit";
import { ledgerTables } from "../governance/tables";

/**
 * API tokens, one repository over governance.db and PostgreSQL
 * (lib/db/port.ts). A bearer token is looked up by its sha256 on the unique
 * index on every request, so a revocation (from any process or replica)
 * counts at once. Every function takes the ledger handle, governance.db's by default.
 */
const apiTokens = ledgerTables.apiTokens;

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

/** A token as listed: its row without the hash, scopes and stores decoded. */
export type TokenInfo = Omit<ApiTokenRow, "token_hash" | "scopes" | "stores"> & { scopes: Scope[]; stores: string[] | null };

function toInfo({ token_hash: _hash, ...row }: ApiTokenRow): TokenInfo {
  return { ...row, scopes: JSON.parse(row.scopes) as Scope[], stores: row.stores ? (JSON.parse(row.stores) as string[]) : null };
}

/** The stores in an allow-list that do not exist (yet) among `existing` (the backend's stores: local SQLite, or PostgreSQL with DATABASE_URL). */
export function missingStores({ stores, existing }: { stores: string[] | null | undefined; existing: readonly string[] }): string[] {
  return [...new Set(stores ?? [])].filter((s) => !existing.includes(s));
}

/**
 * A store in the allow-list must exist unless the token may create it: a
 * write or admin token can (POST /stores, within its list), so naming a store
 * it will make is fine; a read-only token never could, so a store that does
 * not exist is a typo and is refused (422, naming it).
 */
export function assertStoresUsable({ parsed, existing }: { parsed: CreateTokenInput; existing: readonly string[] }): void {
  if (parsed.scopes.some((s) => s !== "read")) return;
  const missing = missingStores({ stores: parsed.stores, existing });
  if (missing.length === 0) return;
  const message = `no such store${missing.length === 1 ? "" : "s"}: ${missing.join(", ")} (a read-only token cannot create it)`;
  throw new AppError("unprocessable", message, [{ path: "stores", message }]);
}

/** `label`, or the first "label (n)" no active token carries (case-insensitive). */
export function firstFreeLabel({ label, activeLabels }: { label: string; activeLabels: string[] }): string {
  const taken = new Set(activeLabels.map((l) => l.toLowerCase()));
  if (!taken.has(label.toLowerCase())) return label;
  for (let n = 2; ; n++) {
    const candidate = `${label.slice(0, 100 - ` (${n})`.length)} (${n})`;
    if (!taken.has(candidate.toLowerCase())) return candidate;
  }
}

/**
 * Create a token. The plaintext is returned once and never stored. A
 * read-only token's stores must exist (422; on PostgreSQL the stores there,
 * not DATA_DIR's), and a label an active token already has gets a number
 * (`info.label` says which).
 */
export function createApiToken<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, input, actor }: { handle?: H; input: z.input<typeof createTokenSchema>; actor: string }): OnLedger<H, { token: string; info: TokenInfo }> {
  const parsed = createTokenSchema.parse(input);
  const token = "dm_" + randomBytes(32).toString("base64url");
  return writeLedger(handle, function* () {
    assertStoresUsable({ parsed, existing: yield* engineStep({ sqlite: () => listStoreNames(), pg: (tx) => storeNamesInPg(tx) }) });
    // Two creates with one label on two replicas would both find it free: they take turns here.
    yield* ledgerLock(PG_LOCK.tokenLabels);
    const active = yield* rows(apiTokens, { where: (t) => isNull(t.revoked_at) });
    const inserted = yield* insert(apiTokens, newTokenRow({ token, parsed, label: firstFreeLabel({ label: parsed.label, activeLabels: active.map((r) => r.label) }), actor }));
    yield* auditStep({ actor, action: "token.create", target: `token:${inserted.id}`, details: { label: inserted.label, agent_id: parsed.agent_id, scopes: parsed.scopes, stores: parsed.stores ?? null } });
    return { token, info: toInfo(inserted) };
  });
}

/** The stored row of a new token: its hash, never the token. */
export function newTokenRow({ token, parsed, label, actor }: { token: string; parsed: CreateTokenInput; label: string; actor: string }) {
  return {
    token_hash: sha256Hex(token),
    display_prefix: token.slice(0, 10),
    label,
    agent_id: parsed.agent_id,
    scopes: JSON.stringify([...new Set(parsed.scopes)]),
    stores: parsed.stores ? JSON.stringify([...new Set(parsed.stores)]) : null,
    created_by: actor,
    created_at: Date.now(),
  };
}

export function listApiTokens<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H }: { handle?: H } = {}): OnLedger<H, TokenInfo[]> {
  return readLedger(handle, function* () {
    return (yield* rows(apiTokens, { orderBy: (t) => [desc(t.id)] })).map(toInfo);
  });
}

export function revokeApiToken<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, id, actor, reason }: { handle?: H; id: number; actor: string; reason?: string }): OnLedger<H, TokenInfo> {
  return writeLedger(handle, function* () {
    const found = yield* row(apiTokens, (t) => eq(t.id, id), { lock: "update" });
    if (!found) throw new AppError("not_found", `no token ${id}`);
    if (found.revoked_at) return toInfo(found);
    const [updated] = yield* update(apiTokens, { revoked_at: Date.now() }, (t) => eq(t.id, id));
    yield* auditStep({ actor, action: "token.revoke", target: `token:${id}`, reason: reason ?? null });
    return toInfo(updated);
  });
}

// last_used_at is written at most once a minute per token so reads stay read-only in practice.
export const LAST_USED_GRANULARITY_MS = 60_000;

let bootstrapMemo: { token: string; hash: Buffer } | null = null;
/** The configured bootstrap token's hash, computed once per value (the config can change under tests). */
function bootstrapHash(token: string): Buffer {
  if (bootstrapMemo?.token !== token) bootstrapMemo = { token, hash: Buffer.from(sha256Hex(token)) };
  return bootstrapMemo.hash;
}

type TokenLookup = Pick<ApiTokenRow, "id" | "agent_id" | "label" | "scopes" | "stores" | "last_used_at" | "revoked_at">;

/** The token row by hash: on governance.db a statement prepared once per connection (it runs on every request). */
function tokenByHash(tokenHash: string): Op<TokenLookup | undefined> {
  return engineStep({
    sqlite: (h) =>
      preparedOnce({ sqlite: h.sqlite, sql: "select id, agent_id, label, scopes, stores, last_used_at, revoked_at from api_tokens where token_hash = ?" }).get(tokenHash) as TokenLookup | undefined,
    pg: async (tx) => (await tx.select().from(apiTokens.pg).where(eq(apiTokens.pg.token_hash, tokenHash)))[0],
  });
}

/**
 * Resolve a bearer token to its principal, or null when unknown or revoked.
 * Looked up outside any transaction (a revocation, from any process, counts
 * at once); last_used_at is one idempotent statement of its own.
 */
export function verifyApiToken<H extends LedgerHandle = GovernanceHandle>({ token, handle = getGovernance() as H }: { token: string; handle?: H }): OnLedger<H, AgentPrincipal | null> {
  return readLedger(handle, function* (): Op<AgentPrincipal | null> {
    const early = bootstrapOrMalformed(token);
    if (early !== undefined) return early;
    const found = yield* tokenByHash(sha256Hex(token));
    if (!found || found.revoked_at) return null;
    const now = Date.now();
    if (!found.last_used_at || now - found.last_used_at > LAST_USED_GRANULARITY_MS) yield* update(apiTokens, { last_used_at: now }, (t) => eq(t.id, found.id));
    return principalOf(found);
  });
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

export function principalOf(row: Pick<ApiTokenRow, "id" | "agent_id" | "label" | "scopes" | "stores">): AgentPrincipal {
  return { tokenId: row.id, agentId: row.agent_id, label: row.label, scopes: JSON.parse(row.scopes) as Scope[], stores: row.stores ? (JSON.parse(row.stores) as string[]) : null };
}

/** admin implies write implies read. */
export function hasScope({ principal, needed }: { principal: AgentPrincipal; needed: Scope }): boolean {
  const rank: Record<Scope, number> = { read: 0, write: 1, admin: 2 };
  return principal.scopes.some((s) => rank[s] >= rank[needed]);
}

export function canUseStore({ principal, store }: { principal: AgentPrincipal; store: string }): boolean {
  return principal.stores === null || principal.stores.includes(store);
}

/** 403 unless the token may use every one of `stores` (the stores a request touches: path, include_core, store fields). */
export function assertStoresAllowed({ principal, stores }: { principal: AgentPrincipal; stores: Iterable<string> }): void {
  for (const store of stores) {
    if (!canUseStore({ principal, store })) throw new AppError("forbidden", `this token may not use store ${store}`);
  }
}

/**
 * Admin over everything: the admin scope on a token not limited to some
 * stores. Tokens, the task ledger and dialectic sessions belong to no store
 * and are keyed by agent id, so a store-limited admin is an admin of its
 * stores only (reindex, re-embed, settings, their jobs), never of these.
 */
export function isUnrestrictedAdmin(principal: AgentPrincipal): boolean {
  return principal.stores === null && hasScope({ principal, needed: "admin" });
}
