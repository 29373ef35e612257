import { eq } from "drizzle-orm";
import { z } from "zod";
import { insertOrIgnore, read, row, tablePair, upsert, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import * as sqliteIndex from "../db/schema/index";
import * as pg from "../db/schema/pg/store";
import { REVIEWABLE_KINDS } from "../db/schema/index";
import { auditStep } from "../governance/audit";
import { ledgerOverrideStep, type LedgerWho } from "./governed-ledger";

/**
 * A store's write policy (docs/ARCHITECTURE.md, "Governed memory"), written once for both engines: per kind of
 * item, `open` (a write counts at once, as it always did) or `review` (a write by an actor the store does not trust,
 * or one the poisoning guard flags, lands as a proposal: lib/index/proposals.ts), and the actors whose writes
 * bypass review. It lives in the store's own index (it travels with the store's backup); a store without a policy
 * row is open for every kind. Traces are not governed: they record what an agent did, not a claim about the world.
 */
export const REVIEW_KINDS = REVIEWABLE_KINDS;
export type ReviewKind = (typeof REVIEW_KINDS)[number];
export const WRITE_MODES = ["open", "review"] as const;
export type WriteMode = (typeof WRITE_MODES)[number];

/** Bounds of the inputs a token controls (SECURITY.md, "Limits"). */
export const WRITE_POLICY_LIMITS = {
  /** Trusted actors in one store's policy. */
  maxTrusted: 100,
  /** Characters of one trusted actor (an agent id, a token label, `user:<name>`). */
  maxTrustedChars: 200,
} as const;

export type WritePolicy = { modes: Record<ReviewKind, WriteMode>; trusted: string[] };
export type WritePolicyView = WritePolicy & { updated_at: number | null; updated_by: string | null };

export const writePolicyTable = tablePair(sqliteIndex.writePolicy, pg.writePolicy);

export const reviewKindSchema = z.enum(REVIEW_KINDS);
const modeSchema = z.enum(WRITE_MODES);
const trustedSchema = z
  .string()
  .trim()
  .min(1)
  .max(WRITE_POLICY_LIMITS.maxTrustedChars, { message: `trusted: each at most ${WRITE_POLICY_LIMITS.maxTrustedChars} characters (maxTrustedChars)` });

/** PUT …/policy/write: the kinds named change mode, the others keep theirs; `trusted` replaces the list when given. */
export const writePolicyInputSchema = z
  .object({
    modes: z.object(Object.fromEntries(REVIEW_KINDS.map((k) => [k, modeSchema.optional()])) as Record<ReviewKind, z.ZodOptional<typeof modeSchema>>).strict().optional(),
    trusted: z.array(trustedSchema).max(WRITE_POLICY_LIMITS.maxTrusted, { message: `trusted: at most ${WRITE_POLICY_LIMITS.maxTrusted} actors (maxTrusted)` }).optional(),
  })
  .strict();
export type WritePolicyInput = z.output<typeof writePolicyInputSchema>;

const OPEN: WritePolicy = { modes: Object.fromEntries(REVIEW_KINDS.map((k) => [k, "open"])) as Record<ReviewKind, WriteMode>, trusted: [] };
/** A store's first policy row before any change: open, as no row reads, and stamped by nobody (it answers as no row). */
const UNSTAMPED = { updatedAt: 0, updatedBy: "" };

function parsed(text: string | undefined): WritePolicy {
  if (!text) return OPEN;
  try {
    const p = JSON.parse(text) as Partial<WritePolicy>;
    const modes = { ...OPEN.modes };
    for (const k of REVIEW_KINDS) if (p.modes?.[k] === "review") modes[k] = "review";
    return { modes, trusted: Array.isArray(p.trusted) ? p.trusted.filter((t): t is string => typeof t === "string") : [] };
  } catch {
    // A policy that cannot be read holds every write for review rather than letting it through.
    return { modes: Object.fromEntries(REVIEW_KINDS.map((k) => [k, "review"])) as Record<ReviewKind, WriteMode>, trusted: [] };
  }
}

/**
 * The store's policy, as a step: one lookup by primary key (a store without a policy row is open). `lock` share-locks
 * the row on PostgreSQL for the rest of the write (a create deciding by it: a policy change waits for it to commit).
 */
export function* writePolicyOp({ lock = false }: { lock?: boolean } = {}): Op<WritePolicyView> {
  const found = yield* row(writePolicyTable, (t) => eq(t.id, 1), lock ? { lock: "share" } : {});
  const stamped = found !== undefined && found.updatedBy !== UNSTAMPED.updatedBy;
  return { ...parsed(found?.policy), updated_at: stamped ? found.updatedAt : null, updated_by: stamped ? found.updatedBy : null };
}

/** The store's policy, as its own read. */
export function readWritePolicy<H extends AnyStoreHandle>({ handle }: { handle: H }): On<H, WritePolicyView> {
  return read(handle, writePolicyOp());
}

/** The audit target of a store's write policy. */
export const writePolicyAuditTarget = ({ store }: { store: string }) => `policy:${store}/write`;

/**
 * Change the store's policy (an admin act): the kinds named take their mode, `trusted` replaces the list when
 * given; the audit entry (old → new) and the ledger row commit with it, or nothing of it does.
 */
export function setWritePolicy<H extends AnyStoreHandle>({ handle, store, input, actor, ledger, now = Date.now() }: { handle: H; store: string; input: WritePolicyInput; actor: string; ledger: LedgerWho; now?: number }): On<H, { old: WritePolicy; policy: WritePolicyView; override_id: string }> {
  // A store's first policy: its row is made in a write of its own first, so the change below updates a row that
  // creates share-lock while they decide by it (lib/index/proposals.ts): they wait for each other. That row is
  // unstamped and open: a change that then fails leaves every answer as it was.
  const made = write(handle, insertOrIgnore(writePolicyTable, { id: 1, policy: JSON.stringify(OPEN), ...UNSTAMPED }, (t) => [t.id] as never));
  const change = () => changeWritePolicy({ handle, store, input, actor, ledger, now });
  return (made instanceof Promise ? made.then(change) : change()) as On<H, { old: WritePolicy; policy: WritePolicyView; override_id: string }>;
}

function changeWritePolicy<H extends AnyStoreHandle>({ handle, store, input, actor, ledger, now }: { handle: H; store: string; input: WritePolicyInput; actor: string; ledger: LedgerWho; now: number }): On<H, { old: WritePolicy; policy: WritePolicyView; override_id: string }> {
  return write(handle, function* () {
    const before = yield* row(writePolicyTable, (t) => eq(t.id, 1), { lock: "update" });
    const old = parsed(before?.policy);
    const next: WritePolicy = { modes: { ...old.modes, ...Object.fromEntries(Object.entries(input.modes ?? {}).filter(([, m]) => m !== undefined)) }, trusted: input.trusted ? [...new Set(input.trusted)] : old.trusted };
    const values = { policy: JSON.stringify(next), updatedAt: now, updatedBy: actor };
    yield* upsert(writePolicyTable, { id: 1, ...values }, (t) => t.id, values);
    yield* auditStep({ actor, action: "write_policy.set", target: writePolicyAuditTarget({ store }), details: { store, old, new: next } });
    const change = REVIEW_KINDS.filter((k) => old.modes[k] !== next.modes[k]).map((k) => `${k} ${old.modes[k]} → ${next.modes[k]}`);
    if (old.trusted.join("\n") !== next.trusted.join("\n")) change.push(`trusted [${old.trusted.join(", ")}] → [${next.trusted.join(", ")}]`);
    const override_id = yield* ledgerOverrideStep({ note: `write_policy.set in store ${store}: ${change.join("; ") || "unchanged"}`, actor, ...ledger });
    return { old, policy: { ...next, updated_at: now, updated_by: actor }, override_id };
  });
}

/**
 * Whether `actor` (`agent:<id>`, `user:<name>`, `cli:<name>`) writing with `tokenLabel` is trusted: the policy names
 * the actor itself, its agent id, or the token's label.
 */
export function isTrusted({ policy, actor, tokenLabel }: { policy: WritePolicy; actor: string; tokenLabel?: string | null }): boolean {
  const names = new Set(policy.trusted);
  if (names.has(actor)) return true;
  if (actor.startsWith("agent:") && names.has(actor.slice(6))) return true;
  return tokenLabel !== undefined && tokenLabel !== null && names.has(tokenLabel);
}
