import { and, desc, eq, gt, inArray, lt, ne, notLike, or } from "drizzle-orm";
import { z } from "zod";
import { sha256Hex } from "../common";
import { insertOrIgnore, read, row, rows, storeLock, tablePair, update, upsert, type AnyStoreHandle, type On, type Op } from "../db/port";
import * as sqliteIndex from "../db/schema/index";
import * as pg from "../db/schema/pg/store";
import { auditStep } from "../governance/audit";
import { decideItemOp, heldInTrash, itemAuditTarget, itemStateTable, ITEM_STATE_LIMITS, type FactsHook, type ItemKind, type ItemTransition } from "./item-state";
import { TRASH_STATE_LIKE } from "./memory-trash-state";
import { workScope } from "../db/work-scope";
import { ledgerOverrideStep } from "./governed-ledger";

/**
 * Facts superseded instead of contradicted (docs/ARCHITECTURE.md, "Governed memory"), written once for both engines.
 *
 * An item written as a fact states a value for a key, its subject and property; each kind says what they are:
 * - memory: `subject` and `property` given on the create, the value `value` (else the body);
 * - learning: `subject` and `property` given on the record, the value its semantic handle (else predicate, args and
 *   description);
 * - relation, when written `exclusive: true`: subject the source node, property the relationship type, value the
 *   target node (an exclusive type holds one target per source: lives_in, works_at);
 * - frame, when written `exclusive: true`: subject the node, property the column and the frame's set of property
 *   keys, value the properties.
 * - thought: `subject` and `property` given on think, the value its content, its event time its timestamp.
 * Traces and nodes have no subject and property: they are never facts.
 *
 * Event time: `valid_from` as written, else the kind's own event time (a relation's temporal_start), else now. Against
 * each active fact of the same kind and key with a different value:
 * - the write's valid_from is later: the old fact is retired (superseded_by the new, valid_to = the new valid_from),
 *   the new one records supersedes; both kept, each link in each history;
 * - it is earlier (an out-of-order write): the current fact stays; the new one is stored as history, already retired,
 *   valid_to = the current one's valid_from (and a retired fact whose time span covered it ends where it begins);
 * - it is the same: nothing can tell which holds; both stay active and each is flagged `contradiction`, listed per
 *   store, and remember's inconsistency counts it.
 * The same value again is no change. Writers of one key are serialized by a store lock, so two at once are ordered,
 * and each sees the other's fact. It runs inside the create's own write (supersedingOp), so the create and
 * what it retires commit together.
 */
export const FACT_LIMITS = {
  /** Characters of a fact's subject. */
  maxSubjectChars: 200,
  /** Characters of a fact's property. */
  maxPropertyChars: 100,
  /** Characters of a fact's value as written (a longer value is compared by its hash). */
  maxValueChars: 1000,
  /** Active facts of one key looked at by a write (a key holds one normally; more only after contradictions). */
  maxActivePerKey: 50,
  /** Contradictions one listing answers. */
  maxListed: 200,
} as const;

const named = (field: string, max: number, limit: string) => ({ message: `${field}: at most ${max} characters (${limit})` });

/** The fact fields a create takes (memories and learnings: subject and property; relations and frames: exclusive). */
export const factSubjectSchema = z.string().trim().min(1).max(FACT_LIMITS.maxSubjectChars, named("subject", FACT_LIMITS.maxSubjectChars, "maxSubjectChars"));
export const factPropertySchema = z.string().trim().min(1).max(FACT_LIMITS.maxPropertyChars, named("property", FACT_LIMITS.maxPropertyChars, "maxPropertyChars"));
export const factValueSchema = z.string().trim().min(1).max(FACT_LIMITS.maxValueChars, named("value", FACT_LIMITS.maxValueChars, "maxValueChars"));
/** When the fact became true (epoch ms): from 2000-01-01 to a day past now, as as_of. */
export const validFromSchema = z
  .number()
  .int()
  .min(ITEM_STATE_LIMITS.minAsOf, { message: `valid_from: epoch milliseconds no earlier than ${ITEM_STATE_LIMITS.minAsOf} (minAsOf)` })
  .refine((t) => t <= Date.now() + 86_400_000, { message: "valid_from: no later than a day from now (maxAsOf)" });

/** What a write claims: its key, its value and when it became true. */
export type FactClaim = { key: string; value: string; validFrom: number };

const normalized = (s: string) => s.trim().replace(/\s+/g, " ").toLowerCase();

/** A fact's key: subject and property, case and spacing folded. */
export function factKeyOf({ subject, property }: { subject: string; property: string }): string {
  return `${normalized(subject)}\u001f${normalized(property)}`;
}

/** A value as compared: folded like a key; past maxValueChars, its hash. */
export function factValueOf({ value }: { value: string }): string {
  const v = normalized(value);
  return v.length <= FACT_LIMITS.maxValueChars ? v : `sha256:${sha256Hex(v)}`;
}

/** A claim from a write's fields, or null when the write is not a fact (no subject or property). */
export function factClaimOf({ subject, property, value, validFrom, now = Date.now() }: { subject?: string | null; property?: string | null; value: string; validFrom?: number | null; now?: number }): FactClaim | null {
  if (!subject || !property) return null;
  // A fact starts no later than it is written: an event time in the future (a thought's timestamp, a relation's
  // temporal_start, valid_from) would otherwise pin its value and file every later write as history.
  return { key: factKeyOf({ subject, property }), value: factValueOf({ value }), validFrom: Math.min(validFrom ?? now, now) };
}

export const itemContradictionsTable = tablePair(sqliteIndex.itemContradictions, pg.itemContradictions);

/** What a fact write did. */
export type FactOutcome = { status: "active" | "retired"; supersedes: string[]; superseded_by: string | null; contradicts: string[] };

const fromOf = (r: { validFrom: number | null; recordedAt: number }) => r.validFrom ?? r.recordedAt;

/**
 * Record `id` (already written, or being written in this transaction) as the fact `claim` of `kind`, resolving it
 * against the key's other facts as the module's rule says. One indexed lookup of the key's active facts.
 */
export function* recordFactOp({ store, kind, id, claim, actor, now = Date.now() }: { store: string; kind: ItemKind; id: string; claim: FactClaim; actor: string; now?: number }): Op<FactOutcome> {
  yield* storeLock("fact", kind, claim.key);
  const own = yield* row(itemStateTable, (t) => and(eq(t.kind, kind), eq(t.itemId, id)));
  // The same item stating the same value (a merged relation, a deduplicated learning): nothing changes.
  if (own?.factKey === claim.key && own.factValue === claim.value) return { status: own.status === "active" ? "active" : "retired", supersedes: [], superseded_by: own.supersededBy, contradicts: [] };
  const actives = yield* rows(itemStateTable, { where: (t) => and(eq(t.kind, kind), eq(t.factKey, claim.key), eq(t.status, "active"), ne(t.itemId, id)), orderBy: (t) => [desc(t.validFrom)], limit: FACT_LIMITS.maxActivePerKey });
  const out: FactOutcome = { status: "active", supersedes: [], superseded_by: null, contradicts: [] };
  let validTo: number | null = null;
  const history: ItemTransition[] = [];
  for (const a of actives) {
    if (a.factValue === claim.value) continue;
    const from = fromOf(a);
    if (claim.validFrom > from) {
      yield* decideItemOp({ store, kind, id: a.itemId, to: "retired", reason: `superseded by ${kind} ${id}: a newer value for the same subject and property`, actor, now, link: { superseded_by: id } });
      yield* update(itemStateTable, { validTo: claim.validFrom }, (t) => and(eq(t.kind, kind), eq(t.itemId, a.itemId)));
      out.supersedes.push(a.itemId);
    } else if (claim.validFrom < from) {
      out.status = "retired";
      validTo = validTo === null ? from : Math.min(validTo, from);
      out.superseded_by ??= a.itemId;
    } else {
      out.contradicts.push(a.itemId);
    }
  }
  // A retired fact whose span covers this one's start ends where this one begins (an older fact arriving late).
  const [covering] = yield* rows(itemStateTable, { where: (t) => and(eq(t.kind, kind), eq(t.factKey, claim.key), eq(t.status, "retired"), ne(t.itemId, id), lt(t.validFrom, claim.validFrom), gt(t.validTo, claim.validFrom)), orderBy: (t) => [desc(t.validFrom)], limit: 1 });
  if (covering && covering.factValue !== claim.value) yield* update(itemStateTable, { validTo: claim.validFrom }, (t) => and(eq(t.kind, kind), eq(t.itemId, covering.itemId)));
  let reason: string;
  if (out.status === "retired") {
    reason = `history: ${kind} ${out.superseded_by} states a newer value for the same subject and property`;
    history.push({ from: "active", to: "retired", at: now, by: actor, reason, superseded_by: out.superseded_by! });
  } else {
    reason = out.supersedes.length ? `supersedes ${kind} ${out.supersedes.join(", ")}` : "fact";
    for (const old of out.supersedes) history.push({ from: "active", to: "active", at: now, by: actor, reason: `supersedes ${kind} ${old}`, supersedes: old });
  }
  const prior = own ? (JSON.parse(own.history) as ItemTransition[]) : [];
  const values = {
    status: out.status,
    validFrom: claim.validFrom,
    validTo,
    retiredAt: out.status === "retired" ? now : null,
    supersedes: out.supersedes.at(-1) ?? own?.supersedes ?? null,
    supersededBy: out.superseded_by,
    reason,
    decidedBy: actor,
    history: JSON.stringify([...prior, ...history].slice(-ITEM_STATE_LIMITS.maxHistory)),
    updatedAt: now,
    factKey: claim.key,
    factValue: claim.value,
  };
  yield* upsert(itemStateTable, { kind, itemId: id, recordedAt: now, ...values }, (t) => [t.kind, t.itemId] as never, values);
  for (const other of out.contradicts) {
    const why = `${kind} ${id} and ${kind} ${other} state different values for the same subject and property at the same time`;
    for (const [a, b] of [
      [id, other],
      [other, id],
    ]) yield* insertOrIgnore(itemContradictionsTable, { kind, itemId: a, otherId: b, factKey: claim.key, reason: why, createdAt: now }, (t) => [t.kind, t.itemId, t.otherId] as never);
  }
  if (out.supersedes.length || out.status === "retired" || out.contradicts.length) {
    yield* auditStep({ actor, action: out.contradicts.length ? "item.contradiction" : out.status === "retired" ? "item.history" : "item.supersede", target: itemAuditTarget({ store, kind, id }), reason, details: { store, kind, id, key: claim.key, valid_from: claim.validFrom, ...out } });
  }
  yield* factLedgerStep({ store, kind, id, outcome: out, actor });
  return out;
}

/** A contradiction as listed and flagged. */
export type Contradiction = { kind: ItemKind; id: string; other_id: string; rule: "same_subject_property"; reason: string; created_at: number };

const contradictionOf = (r: sqliteIndex.ItemContradictionRow): Contradiction => ({ kind: r.kind, id: r.itemId, other_id: r.otherId, rule: "same_subject_property", reason: r.reason, created_at: r.createdAt });

/** The store's contradictions, newest first, both items still active (a resolved one, by retiring either, is left out). */
export function listContradictions<H extends AnyStoreHandle>({ handle, limit = FACT_LIMITS.maxListed }: { handle: H; limit?: number }): On<H, Contradiction[]> {
  return read(handle, function* () {
    // A deleted memory's pairs wait in the trash with it (lib/index/memory-trash-state.ts): not listed until restored.
    const found = yield* rows(itemContradictionsTable, { where: (t) => and(notLike(t.itemId, TRASH_STATE_LIKE), notLike(t.otherId, TRASH_STATE_LIKE)), orderBy: (t) => [desc(t.createdAt)], limit: Math.min(limit, FACT_LIMITS.maxListed) * 2 });
    if (found.length === 0) return [];
    const ids = [...new Set(found.flatMap((r) => [r.itemId, r.otherId]))];
    const byKind = new Map<ItemKind, string[]>();
    for (const r of found) byKind.set(r.kind, ids);
    const states = yield* rows(itemStateTable, { where: (t) => and(ne(t.status, "active"), or(...[...byKind.keys()].map((k) => and(eq(t.kind, k), inArray(t.itemId, ids))))) });
    const retired = new Set(states.map((r) => `${r.kind}:${r.itemId}`));
    return found.filter((r) => !retired.has(`${r.kind}:${r.itemId}`) && !retired.has(`${r.kind}:${r.otherId}`) && r.itemId < r.otherId).slice(0, limit).map(contradictionOf);
  });
}

/** Of `ids` of each kind, their contradictions with items still active ("kind:id" → contradictions). Bounded by the ids asked. */
export function* contradictionsOfOp({ ids }: { ids: Partial<Record<ItemKind, readonly string[]>> }): Op<Map<string, Contradiction[]>> {
  const out = new Map<string, Contradiction[]>();
  for (const [kind, list] of Object.entries(ids) as [ItemKind, readonly string[]][]) {
    if (list.length === 0) continue;
    const found = yield* rows(itemContradictionsTable, { where: (t) => and(eq(t.kind, kind), inArray(t.itemId, [...list].slice(0, ITEM_STATE_LIMITS.maxIds))) });
    if (found.length === 0) continue;
    const others = [...new Set(found.map((r) => r.otherId))];
    const resolved = new Set((yield* rows(itemStateTable, { where: (t) => and(eq(t.kind, kind), ne(t.status, "active"), inArray(t.itemId, others)) })).map((r) => r.itemId));
    for (const r of found) {
      if (resolved.has(r.otherId) || heldInTrash({ kind, id: r.otherId })) continue;
      const key = `${kind}:${r.itemId}`;
      out.set(key, [...(out.get(key) ?? []), contradictionOf(r)]);
    }
  }
  return out;
}

/** contradictionsOfOp as its own read. */
export function contradictionsOf<H extends AnyStoreHandle>({ handle, ids }: { handle: H; ids: Partial<Record<ItemKind, readonly string[]>> }): On<H, Map<string, Contradiction[]>> {
  return read(handle, contradictionsOfOp({ ids }));
}

/** The fields a create may carry to be written as a fact (the backends strip them before the kind's own create). */
export const FACT_INPUT_KEYS = ["subject", "property", "value", "valid_from", "exclusive"] as const;
type FactInput = { subject?: string | null; property?: string | null; value?: string | null; valid_from?: number | null; exclusive?: boolean };

const sortedJson = (o: Record<string, unknown>) => JSON.stringify(Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));

/**
 * Each kind's subject, property and value (the module's rule), from its create input. A rule answers null when the
 * write is not a fact.
 */
export const FACT_RULES = {
  memory: (i: FactInput & { body?: string }) => factClaimOf({ subject: i.subject, property: i.property, value: i.value ?? i.body ?? "", validFrom: i.valid_from }),
  learning: (i: FactInput & { predicate?: string; args?: Record<string, unknown>; description?: string; semantic_handle?: string }) =>
    factClaimOf({ subject: i.subject, property: i.property, value: i.value ?? i.semantic_handle ?? `${i.predicate ?? ""} ${sortedJson(i.args ?? {})} ${i.description ?? ""}`, validFrom: i.valid_from }),
  thought: (i: FactInput & { content?: string; timestamp?: number }) => factClaimOf({ subject: i.subject, property: i.property, value: i.value ?? i.content ?? "", validFrom: i.valid_from ?? i.timestamp }),
  relation: (i: FactInput & { from_id?: string; to_id?: string; relationship_type?: string; temporal_start?: number | null }) =>
    i.exclusive === true && i.from_id && i.to_id && i.relationship_type ? factClaimOf({ subject: i.from_id, property: i.relationship_type.trim().toLowerCase().replace(/\s+/g, "_"), value: i.to_id, validFrom: i.valid_from ?? i.temporal_start }) : null,
  frame: (i: FactInput & { node_id?: string; column?: string; properties?: Record<string, unknown> }) =>
    i.exclusive === true && i.node_id && i.column && i.properties ? factClaimOf({ subject: i.node_id, property: `${i.column}:${Object.keys(i.properties).sort().join(",")}`, value: sortedJson(i.properties), validFrom: i.valid_from }) : null,
} as const;

/** A create's input without its fact fields (each kind's own create parses strictly). */
export function withoutFactFields<I extends object>({ input }: { input: I }): I {
  const out = { ...input } as Record<string, unknown>;
  for (const k of FACT_INPUT_KEYS) delete out[k];
  return out as I;
}

/** A kind's fact rule as supersedingOp and proposing() take it (lib/index/item-state.ts FactsHook). */
export function factsOf({ kind }: { kind: keyof typeof FACT_RULES }): FactsHook {
  const rule = FACT_RULES[kind] as (i: Record<string, unknown>) => FactClaim | null;
  return { claimOf: (input) => rule(input), record: recordFactOp, strip: withoutFactFields };
}

/**
 * A contradiction as a flag beside the poisoning flags (lib/poison.ts's shape: flag, rule, reason, field, span,
 * excerpt), with the other item's id: on the single-item reads of each fact kind and on remember's results.
 */
export const contradictionFlagSchema = z.strictObject({
  flag: z.literal("contradiction"),
  rule: z.literal("same_subject_property"),
  reason: z.string(),
  field: z.literal("fact"),
  start: z.literal(0),
  end: z.literal(0),
  /** "contradicts <kind> <other id>". */
  excerpt: z.string(),
  other_id: z.string(),
});
export type ContradictionFlag = z.infer<typeof contradictionFlagSchema>;

export function contradictionFlagsOf({ contradictions }: { contradictions: readonly Contradiction[] }): ContradictionFlag[] {
  return contradictions.map((c) => ({ flag: "contradiction", rule: c.rule, reason: c.reason, field: "fact", start: 0, end: 0, excerpt: `contradicts ${c.kind} ${c.other_id}`, other_id: c.other_id }));
}

/** A single-item read whose answer carries its unresolved contradictions in `flags` (one lookup by id). */
export function flaggingContradictions<A extends { store: string }, R extends { flags: unknown[] }>({ kind, open, get, idOf }: { kind: ItemKind; open: (store: string) => Promise<AnyStoreHandle>; get: (a: A) => Promise<R>; idOf: (r: R) => string }): (a: A) => Promise<R> {
  return async (a) => {
    const item = await get(a);
    const id = idOf(item);
    const found = (await contradictionsOf({ handle: await open(a.store), ids: { [kind]: [id] } })).get(`${kind}:${id}`);
    return found ? { ...item, flags: [...item.flags, ...contradictionFlagsOf({ contradictions: found })] } : item;
  };
}

/**
 * The ledger row of an automatic supersession, in the fact write's own transaction beside its audit entry, as a
 * manual decision has one: what the rule retired (older values, or this write filed as history), by whom.
 */
function* factLedgerStep({ store, kind, id, outcome, actor }: { store: string; kind: ItemKind; id: string; outcome: FactOutcome; actor: string }): Op<void> {
  const tokenLabel = workScope.getStore()?.writer?.tokenLabel ?? null;
  if (outcome.supersedes.length) yield* ledgerOverrideStep({ note: `item.supersede ${kind} ${outcome.supersedes.join(", ")} by ${id} in store ${store}: a newer value for the same subject and property`, actor, tokenLabel });
  else if (outcome.status === "retired") yield* ledgerOverrideStep({ note: `item.history ${kind} ${id} in store ${store}: ${kind} ${outcome.superseded_by} states a newer value for the same subject and property`, actor, tokenLabel });
}
