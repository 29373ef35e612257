import { and, eq, inArray, or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { z } from "zod";
import { AppError } from "../errors";
import { engineStep, read, row, rows, sqlRun, tablePair, upsert, write, type AnyStoreHandle, type On, type Op, type TablePair } from "../db/port";
import * as sqliteIndex from "../db/schema/index";
import * as sqliteGraph from "../db/schema/graph";
import * as sqliteRecall from "../db/schema/recall";
import * as pg from "../db/schema/pg/store";
import { ITEM_KINDS, type ItemStateRow } from "../db/schema/index";
import { auditStep } from "../governance/audit";
import { ledgerOverrideStep, type LedgerWho } from "./governed-ledger";
import { boolParam } from "./query-params";
import { preparedOnce } from "../db/statements";
import { workScope } from "../db/work-scope";

/**
 * Governed memory's per-item state (docs/ARCHITECTURE.md, "Governed memory"),
 * written once for both engines over the port. An item of any kind (memory,
 * learning, trace, thought, node, relation, frame) is active until a decision
 * gives it a row in item_state; invalidate retires it, restore makes it active
 * again, each transition kept in the row's history with who and why. Nothing
 * of the item itself changes: restore returns it as it was (same id, content,
 * embeddings).
 *
 * Retrieval asks visibleIds for the candidates it is about to answer with:
 * one lookup by primary key over those ids, which on a store that never had a
 * decision finds nothing. By default only active items answer; `as_of` answers
 * what was visible at that time (from the history); `include_retired` answers
 * every item, with its state.
 */
export type ItemKind = (typeof ITEM_KINDS)[number];
export type ItemStatus = ItemStateRow["status"];
export { ITEM_KINDS };

export const itemStateTable = tablePair(sqliteIndex.itemState, pg.itemState);

/** Bounds of the inputs a token controls (SECURITY.md, "Limits"). */
export const ITEM_STATE_LIMITS = {
  /** Characters of a decision's reason. */
  maxReasonChars: 2000,
  /** Characters of an item id. */
  maxIdChars: 512,
  /** Transitions kept in one item's history: the oldest go first. */
  maxHistory: 100,
  /** Ids looked up in one visibility check (retrieval asks for its candidates). */
  maxIds: 5000,
  /** as_of: epoch ms, from 2000-01-01 to a day past now. */
  minAsOf: 946_684_800_000,
} as const;

/** One transition of an item's state. */
export type ItemTransition = { from: ItemStatus; to: ItemStatus; at: number; by: string; reason: string; supersedes?: string; superseded_by?: string };

/** What retrieval may answer with: the default (active only), a past time, or every item with its state. */
export type ItemView = { asOf?: number; includeRetired?: boolean; /** Proposals waiting for review answer too, marked (lib/index/proposals.ts). */ includeProposed?: boolean };

export const itemKindSchema = z.enum(ITEM_KINDS);
export const itemIdSchema = z.string().trim().min(1).max(ITEM_STATE_LIMITS.maxIdChars, { message: `id: at most ${ITEM_STATE_LIMITS.maxIdChars} characters (maxIdChars)` });
export const itemReasonSchema = z.string().trim().min(1, { message: "reason is required: say why" }).max(ITEM_STATE_LIMITS.maxReasonChars, { message: `reason: at most ${ITEM_STATE_LIMITS.maxReasonChars} characters (maxReasonChars)` });
export const itemDecisionSchema = z.object({ reason: itemReasonSchema }).strict();

/**
 * The query parameters every retrieval and list route takes for item state: `as_of` (epoch ms, bounded: a 4xx
 * names the limit) and `include_retired`.
 */
export const itemViewQuerySchema = {
  as_of: z.coerce
    .number()
    .int()
    .min(ITEM_STATE_LIMITS.minAsOf, { message: `as_of: epoch milliseconds no earlier than ${ITEM_STATE_LIMITS.minAsOf} (minAsOf)` })
    .refine((t) => t <= Date.now() + 86_400_000, { message: "as_of: no later than a day from now (maxAsOf)" })
    .optional(),
  include_retired: boolParam.optional(),
  /** Proposals waiting for review answer too (marked item_status: "proposed"); retired and rejected items still do not. */
  include_proposed: boolParam.optional(),
};

/** The item view a route's parsed query asks for. */
export function itemViewOf(query: { as_of?: number; include_retired?: boolean; include_proposed?: boolean }): ItemView {
  return { asOf: query.as_of, includeRetired: query.include_retired, includeProposed: query.include_proposed };
}

/** Each kind's own table and id column, for "does this item exist" (an unknown id is a 404). */
const ITEM_TABLES = {
  memory: { table: tablePair(sqliteIndex.memories, pg.memories), id: "path", numeric: false },
  learning: { table: tablePair(sqliteRecall.learnings, pg.learnings), id: "id", numeric: true },
  trace: { table: tablePair(sqliteRecall.reasoningTraces, pg.reasoningTraces), id: "id", numeric: true },
  thought: { table: tablePair(sqliteGraph.thoughts, pg.thoughts), id: "id", numeric: false },
  node: { table: tablePair(sqliteGraph.kgNodes, pg.kgNodes), id: "id", numeric: false },
  relation: { table: tablePair(sqliteGraph.kgRelations, pg.kgRelations), id: "id", numeric: false },
  frame: { table: tablePair(sqliteGraph.kgFrames, pg.kgFrames), id: "id", numeric: false },
} as const satisfies Record<ItemKind, { table: TablePair; id: string; numeric: boolean }>;

/**
 * A deleted memory's kept state waits under `.trash/<trash id>` (lib/index/memory-trash-state.ts), a key no memory
 * path can take: no route reaches it by id. Invalidate, restore, history and every proposal route answer it as an
 * id never written (404).
 */
export const TRASH_STATE_PREFIX = ".trash/";
export const heldInTrash = ({ kind, id }: { kind: ItemKind; id: string }) => kind === "memory" && id.startsWith(TRASH_STATE_PREFIX);

/** The 409 of an agent's create that merged into a proposal waiting for review (lib/index/proposals.ts): the merge rolls back. */
export function mergesIntoProposal({ store, kind, id }: { store: string; kind: ItemKind; id: string }): AppError {
  return new AppError("review_pending", `this ${kind} merges into ${kind} ${id}, a proposal waiting for review in store ${store}: a reviewer approves it (with an edit if it needs one)`, [{ path: "id", message: "proposed" }]);
}

/** The one 404 for an item that is not there and one the caller may not see. */
export function itemNotFound({ store, kind, id }: { store: string; kind: ItemKind; id: string }): AppError {
  return new AppError("not_found", `no ${kind} ${id} in store ${store}`);
}

/**
 * Whether the item is there. A write that goes on to record the item's state passes `lock: "share"`: on PostgreSQL the
 * item's row is share-locked until it commits, so a delete running beside it waits and then takes the state with it
 * (itemsDeletedOp) instead of leaving a state row for an item gone (SQLite's writes are serial).
 */
function* itemExists(kind: ItemKind, id: string, { lock }: { lock?: "share" } = {}): Op<boolean> {
  if (heldInTrash({ kind, id })) return false;
  const spec = ITEM_TABLES[kind];
  if (spec.numeric && !/^[1-9][0-9]{0,15}$/.test(id)) return false;
  const value = spec.numeric ? Number(id) : id;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the id column is named per kind; both engines' tables declare it
  return (yield* row(spec.table as TablePair, (t) => eq((t as any)[spec.id], value), { lock })) !== undefined;
}

const keyOf = (kind: ItemKind, id: string) => (t: typeof itemStateTable.sqlite | typeof itemStateTable.pg) => and(eq(t.kind, kind), eq(t.itemId, id)) as SQL;

function historyOf(r: Pick<ItemStateRow, "history"> | undefined): ItemTransition[] {
  if (!r) return [];
  try {
    const parsed = JSON.parse(r.history) as unknown;
    return Array.isArray(parsed) ? (parsed as ItemTransition[]) : [];
  } catch {
    return [];
  }
}

/**
 * A memory's state follows its path, in the write that moves or deletes it: a move takes it (and its history) to
 * the new path, a delete drops it (itemsDeletedOp), so a memory written later at a freed path starts active, not with
 * the state of the one that was there.
 */
export function* memoryStateFollowsOp({ from, to }: { from: string; to: string | null }): Op<void> {
  if (to === null || to === from) {
    if (to === null) yield* itemsDeletedOp({ kind: "memory", ids: [from] });
    return;
  }
  yield* memoryContradictionsFollowOp({ from, to });
  yield* sqlRun(sql`delete from item_state where kind = 'memory' and item_id = ${to}`);
  yield* sqlRun(sql`update item_state set item_id = ${to} where kind = 'memory' and item_id = ${from}`);
  // A proposal's provenance (lib/index/proposals.ts) moves with it, so the moved proposal stays in the review queue;
  // so does what forgetting runs retired of it (lib/index/forgetting.ts: a memory restored after one is not taken again).
  yield* sqlRun(sql`delete from proposals where kind = 'memory' and item_id = ${to}`);
  yield* sqlRun(sql`update proposals set item_id = ${to} where kind = 'memory' and item_id = ${from}`);
  yield* sqlRun(sql`delete from forget_retired where kind = 'memory' and item_id = ${to}`);
  yield* sqlRun(sql`update forget_retired set item_id = ${to} where kind = 'memory' and item_id = ${from}`);
}

/**
 * A memory's contradictions (lib/index/facts.ts: a row per item and other item, both ways) follow its key as its state
 * does: moved to `to` (a move, the trash entry's key, back from the trash). Each way is found by its primary key from
 * the memory's own rows.
 */
export function* memoryContradictionsFollowOp({ from, to }: { from: string; to: string }): Op<void> {
  yield* contradictionsGoneOp({ kind: "memory", ids: sql`(${to})` });
  const others = sql`(select c.other_id from item_contradictions c where c.kind = 'memory' and c.item_id = ${from})`;
  yield* sqlRun(sql`update item_contradictions set other_id = ${to} where kind = 'memory' and other_id = ${from} and item_id in ${others}`);
  yield* sqlRun(sql`update item_contradictions set item_id = ${to} where kind = 'memory' and item_id = ${from}`);
}

/** Ids a delete passes at once to itemsDeletedOp (a retention run can delete many). */
const DELETED_IDS_PER_STATEMENT = 500;

/**
 * What an item's id keys outside its own table goes with the item, in its delete's own write, for every kind and every
 * path that deletes one (a delete by id, a node's frames and relations that cascade with it, a merge of twins, trace
 * retention, a memory's delete or purge): its state and history, its proposal's provenance, its contradictions both
 * ways, the forgetting runs' record of retiring it. So no other item stays listed, flagged or penalised by remember for
 * a contradiction with one gone, the review queue does not list it, a later fact of its subject and property is
 * neither retired against it nor contradicts it, and a memory written later at its path can be forgotten by policy.
 * `ids`: the ids, or (a cascade) a parenthesized subquery of them as text.
 */
export function* itemsDeletedOp({ kind, ids }: { kind: ItemKind; ids: readonly string[] | SQL }): Op<void> {
  if (!Array.isArray(ids)) return yield* itemRowsGoneOp({ kind, ids: ids as SQL });
  for (let i = 0; i < ids.length; i += DELETED_IDS_PER_STATEMENT) {
    yield* itemRowsGoneOp({ kind, ids: sql`(${sql.join(ids.slice(i, i + DELETED_IDS_PER_STATEMENT).map((id) => sql`${id}`), sql`, `)})` });
  }
}

function* itemRowsGoneOp({ kind, ids }: { kind: ItemKind; ids: SQL }): Op<void> {
  yield* contradictionsGoneOp({ kind, ids });
  yield* sqlRun(sql`delete from proposals where kind = ${kind} and item_id in ${ids}`);
  yield* sqlRun(sql`delete from item_state where kind = ${kind} and item_id in ${ids}`);
  yield* sqlRun(sql`delete from forget_retired where kind = ${kind} and item_id in ${ids}`);
}

/** The contradictions of `ids` both ways: the other item's row of each pair found by its primary key from their own. */
function* contradictionsGoneOp({ kind, ids }: { kind: ItemKind; ids: SQL }): Op<void> {
  yield* sqlRun(sql`delete from item_contradictions where kind = ${kind} and other_id in ${ids} and item_id in (select c.other_id from item_contradictions c where c.kind = ${kind} and c.item_id in ${ids})`);
  yield* sqlRun(sql`delete from item_contradictions where kind = ${kind} and item_id in ${ids}`);
}

/**
 * The audit target of an item: answerable from System 2 as "who retired this and why", in the form every store
 * write's audit entry uses (`store:<store>/<kind>:<id>`), so the activity explorer's store filter finds it.
 */
export const itemAuditTarget = ({ store, kind, id }: { store: string; kind: ItemKind; id: string }) => `store:${store}/${kind}:${id}`;

/** An item's state as the API shows it. */
export type ItemState = { kind: ItemKind; id: string; status: ItemStatus; recorded_at: number | null; retired_at: number | null; valid_from: number | null; valid_to: number | null; supersedes: string | null; superseded_by: string | null; reason: string | null; decided_by: string | null; updated_at: number | null };

function stateOf(kind: ItemKind, id: string, r: ItemStateRow | undefined): ItemState {
  return {
    kind,
    id,
    status: r?.status ?? "active",
    recorded_at: r?.recordedAt ?? null,
    retired_at: r?.retiredAt ?? null,
    valid_from: r?.validFrom ?? null,
    valid_to: r?.validTo ?? null,
    supersedes: r?.supersedes ?? null,
    superseded_by: r?.supersededBy ?? null,
    reason: r?.reason ?? null,
    decided_by: r?.decidedBy ?? null,
    updated_at: r?.updatedAt ?? null,
  };
}

export type ItemDecision = { state: ItemState; transition: ItemTransition };

/**
 * One decision on one item, as a step of a store write: its state moves to `to`, the transition joins its history,
 * and the audit entry commits with it. 404 when the item is not there; 409 when it already is in that state
 * (item_already_retired, item_not_retired): never a silent no-op.
 */
export function* decideItemOp({ store, kind, id, to, reason, actor, now = Date.now(), link = {} }: { store: string; kind: ItemKind; id: string; to: "retired" | "active"; reason: string; actor: string; now?: number; link?: { supersedes?: string; superseded_by?: string } }): Op<ItemDecision> {
  if (!(yield* itemExists(kind, id, { lock: "share" }))) throw itemNotFound({ store, kind, id });
  const current = yield* row(itemStateTable, keyOf(kind, id), { lock: "update" });
  const from: ItemStatus = current?.status ?? "active";
  if (from === "proposed" || from === "rejected") return yield* reviewedItemDecisionOp({ store, kind, id, from, to, reason, actor, now, current: current! });
  if (from === to) {
    throw to === "retired"
      ? new AppError("item_already_retired", `${kind} ${id} is already retired (restore it first)`, [{ path: "id", message: "already retired", status: from }])
      : new AppError("item_not_retired", `${kind} ${id} is ${from}: only a retired item can be restored`, [{ path: "id", message: `status is ${from}`, status: from }]);
  }
  const transition: ItemTransition = { from, to, at: now, by: actor, reason, ...link };
  const history = [...historyOf(current), transition].slice(-ITEM_STATE_LIMITS.maxHistory);
  const values = {
    status: to,
    retiredAt: to === "retired" ? now : null,
    reason,
    decidedBy: actor,
    history: JSON.stringify(history),
    updatedAt: now,
    ...(link.supersedes !== undefined ? { supersedes: link.supersedes } : {}),
    ...(link.superseded_by !== undefined ? { supersededBy: link.superseded_by } : {}),
  };
  const written = yield* upsert(itemStateTable, { kind, itemId: id, recordedAt: now, ...values }, (t) => [t.kind, t.itemId] as never, values);
  yield* auditStep({ actor, action: to === "retired" ? "item.invalidate" : "item.restore", target: itemAuditTarget({ store, kind, id }), reason, details: { store, kind, id, from, to, ...link } });
  return { state: stateOf(kind, id, written), transition };
}

/**
 * Invalidate or restore of an item under review (lib/index/proposals.ts): a proposal is approved or rejected in the
 * review queue, not restored or invalidated (409 not_proposed says where); restore of a rejected item re-opens it as
 * a proposal (→ proposed), to be reviewed again, never straight to active.
 */
function* reviewedItemDecisionOp({ store, kind, id, from, to, reason, actor, now, current }: { store: string; kind: ItemKind; id: string; from: "proposed" | "rejected"; to: "retired" | "active"; reason: string; actor: string; now: number; current: ItemStateRow }): Op<ItemDecision> {
  if (from === "proposed") throw new AppError("not_proposed", `${kind} ${id} is a proposal waiting for review: approve or reject it in the review queue`, [{ path: "id", message: "status is proposed", status: from }]);
  if (to === "retired") throw new AppError("item_already_retired", `${kind} ${id} was rejected: it already answers nothing`, [{ path: "id", message: "status is rejected", status: from }]);
  const transition: ItemTransition = { from, to: "proposed", at: now, by: actor, reason };
  const values = { status: "proposed" as const, retiredAt: null, reason, decidedBy: actor, history: JSON.stringify([...historyOf(current), transition].slice(-ITEM_STATE_LIMITS.maxHistory)), updatedAt: now };
  const written = yield* upsert(itemStateTable, { kind, itemId: id, recordedAt: now, ...values }, (t) => [t.kind, t.itemId] as never, values);
  yield* auditStep({ actor, action: "proposal.reopen", target: itemAuditTarget({ store, kind, id }), reason, details: { store, kind, id, from, to: "proposed" } });
  return { state: stateOf(kind, id, written), transition };
}

/** Invalidate (to: "retired") or restore (to: "active") one item by id, in one store write with its audit entry and ledger row. */
export function decideItem<H extends AnyStoreHandle>({ handle, ledger, ...a }: { handle: H; ledger: LedgerWho } & Parameters<typeof decideItemOp>[0]): On<H, ItemDecision & { override_id: string }> {
  return write(handle, function* () {
    const decision = yield* decideItemOp(a);
    const verb = a.to === "retired" ? "invalidate" : "restore";
    const override_id = yield* ledgerOverrideStep({ note: `item.${verb} ${a.kind} ${a.id} in store ${a.store}: ${a.reason}`, actor: a.actor, ...ledger });
    return { ...decision, override_id };
  });
}

/** An item's state and its transitions, oldest first; 404 when the item is not there. */
export function itemHistory<H extends AnyStoreHandle>({ handle, store, kind, id }: { handle: H; store: string; kind: ItemKind; id: string }): On<H, { state: ItemState; history: ItemTransition[] }> {
  return read(handle, function* () {
    if (heldInTrash({ kind, id })) throw itemNotFound({ store, kind, id });
    const current = yield* row(itemStateTable, keyOf(kind, id));
    if (!current && !(yield* itemExists(kind, id))) throw itemNotFound({ store, kind, id });
    return { state: stateOf(kind, id, current), history: historyOf(current) };
  });
}

/**
 * The status an item had at `t`, from its history (before its first decision: active). A superseding item's row is
 * written with it: before then it did not exist, so at such a `t` it answers as not active (under include_retired,
 * marked retired) and the item it superseded, active then, answers in its place.
 */
function statusAt(r: ItemStateRow, t: number): ItemStatus {
  // A fact (lib/index/facts.ts) answers by event time: visible from its valid_from until its valid_to; only the
  // decisions made by hand (not a supersession) apply by record time.
  const fact = r.factKey !== null && r.validFrom !== null;
  if (fact && (t < r.validFrom! || (r.validTo !== null && t >= r.validTo))) return "retired";
  if (!fact && r.supersedes !== null && r.recordedAt > t) return "retired";
  let status: ItemStatus = "active";
  for (const step of historyOf(r)) {
    if (step.at > t) break;
    if (fact && (step.superseded_by !== undefined || step.supersedes !== undefined)) continue;
    status = step.to;
  }
  return status;
}

/** Each kind's creation time column, for as_of: an item written after `t` was not there at `t`. */
const CREATED_AT = { memory: "createdAt", learning: "createdAt", trace: "createdAt", thought: "timestamp", node: "createdAt", relation: "createdAt", frame: "createdAt" } as const satisfies Record<ItemKind, string>;

/** Of `ids` of `kind`, those written after `t` (one lookup by id per kind; asked only under as_of). */
function* writtenAfter(kind: ItemKind, ids: readonly string[], t: number): Op<string[]> {
  const spec = ITEM_TABLES[kind];
  const keys = spec.numeric ? ids.filter((id) => /^[1-9][0-9]{0,15}$/.test(id)).map(Number) : [...ids];
  if (keys.length === 0) return [];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the id and time columns are named per kind; both engines' tables declare them
  const found = yield* rows(spec.table as TablePair, { where: (tb) => and(inArray((tb as any)[spec.id], keys), sql`${(tb as any)[CREATED_AT[kind]]} > ${t}`) as SQL });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
  return found.map((r) => String((r as any)[spec.id]));
}

/**
 * Whether the store has any item state: on SQLite one cached statement (a store that never had a decision pays
 * that and nothing more); on PostgreSQL the lookup itself is the one statement, so it is not asked.
 */
function holdsAnyState(): Op<boolean> {
  return engineStep({
    sqlite: (h) => preparedOnce({ sqlite: h.sqlite, sql: "select 1 from item_state limit 1" }).get() !== undefined,
    pg: async () => true,
  });
}

/** Whether the store has any item state, as a step (one statement; on SQLite a cached one). */
export function holdsItemStateOp(): Op<boolean> {
  return engineStep({
    sqlite: (h) => preparedOnce({ sqlite: h.sqlite, sql: "select 1 from item_state limit 1" }).get() !== undefined,
    pg: async (tx) => (await tx.execute(sql`select 1 from item_state limit 1`)).rows.length > 0,
  }) as Op<boolean>;
}

/** Whether the store has any item state, as its own read. */
export async function holdsItemState({ handle }: { handle: AnyStoreHandle }): Promise<boolean> {
  return read(handle, holdsItemStateOp());
}

/**
 * The view's filter inside a retrieval statement (search's and recall's full-text and vector statements): the items
 * not active (proposals too unless include_proposed) are left out where the rows are ranked, so a flood of hidden
 * items cannot take a page's places. Null where the statement filters nothing: a store without item state (it pays
 * the one probe), include_retired (marks instead), as_of (answered from each row's history, after the statement).
 */
export type HiddenRowsFilter = { includeProposed: boolean } | null;

export function hiddenRowsFilter({ view, stateful }: { view: ItemView; stateful: boolean }): HiddenRowsFilter {
  if (!stateful || view.includeRetired || view.asOf !== undefined) return null;
  return { includeProposed: view.includeProposed === true };
}

/** hiddenRowsFilter of a store, as a step (its probe runs only when the view could filter). */
export function* hiddenRowsFilterOp({ view }: { view: ItemView }): Op<HiddenRowsFilter> {
  if (view.includeRetired || view.asOf !== undefined) return null;
  return hiddenRowsFilter({ view, stateful: yield* holdsItemStateOp() });
}

/**
 * hiddenRowsFilter as SQL text over a document row `d` (search's chunks and documents), both engines: a memory
 * document (`memory/<path>.md`) whose memory is hidden is left out. `schema`: SQLite's attached core.
 */
export function hiddenMemoryDocumentSql({ filter, schema }: { filter: NonNullable<HiddenRowsFilter>; schema?: "main" | "core" }): string {
  // The memory's id is the path less 'memory/' and '.md' (no id when the path is too short to hold one: PostgreSQL's
  // substr refuses a negative length, and SQL does not promise to test d.kind first); the path is compared whole too.
  const id = "case when length(d.path) > 10 then substr(d.path, 8, length(d.path) - 10) end";
  return `(d.kind <> 'memory' or ${shownRowSql({ kind: "memory", id, filter, schema, also: "d.path = 'memory/' || ist.item_id || '.md'" })})`;
}

/**
 * hiddenRowsFilter as SQL text over one row's id (`id`: a column or an expression of the row; text), both engines: the
 * row's state is looked up by item_state's primary key (kind, item_id) for that row alone, so the statement's cost
 * follows the rows it reads, never how many items are hidden. `also`: a further condition on the state row found.
 */
export function shownRowSql({ kind, id, filter, schema, also }: { kind: ItemKind; id: string; filter: NonNullable<HiddenRowsFilter>; schema?: "main" | "core"; also?: string }): string {
  return `not exists (select 1 from ${schema ? `${schema}.` : ""}item_state ist where ist.kind = '${itemKindLiteral(kind)}' and ist.item_id = ${id}${also ? ` and ${also}` : ""} and ist.status ${notShownStatus(filter.includeProposed)})`;
}

/**
 * Of the ids of each kind, the states of those retrieval must not answer with under `view` (kind → id → status;
 * with include_retired, those to mark). One statement by primary key for every kind; ids past maxIds are refused.
 */
export function* hiddenByKindOp({ ids, view = {} }: { ids: Partial<Record<ItemKind, readonly string[]>>; view?: ItemView }): Op<Map<ItemKind, Map<string, ItemStatus>>> {
  const out = new Map<ItemKind, Map<string, ItemStatus>>();
  const asked = (Object.entries(ids) as [ItemKind, readonly string[]][]).filter(([, list]) => list.length > 0).map(([kind, list]) => [kind, [...new Set(list)]] as const);
  if (asked.length === 0) return out;
  if (view.asOf === undefined && !(yield* holdsAnyState())) return out;
  const total = asked.reduce((n, [, list]) => n + list.length, 0);
  if (total > ITEM_STATE_LIMITS.maxIds) throw new AppError("invalid_request", `at most ${ITEM_STATE_LIMITS.maxIds} items per visibility check (maxIds)`, [{ path: "ids", message: "too many", limit: "maxIds", max: ITEM_STATE_LIMITS.maxIds, found: total }]);
  const hide = (kind: ItemKind, id: string, status: ItemStatus) => {
    let of = out.get(kind);
    if (!of) out.set(kind, (of = new Map()));
    of.set(id, status);
  };
  // as_of: an item written after then was not there, whatever its state (a fact's row answers by its event time instead).
  const later = new Map<ItemKind, Set<string>>();
  if (view.asOf !== undefined) for (const [kind, list] of asked) later.set(kind, new Set(yield* writtenAfter(kind, list, view.asOf)));
  const found = (yield* holdsAnyState()) ? yield* rows(itemStateTable, { where: (t) => or(...asked.map(([kind, list]) => and(eq(t.kind, kind), inArray(t.itemId, list)))) }) : [];
  for (const r of found) {
    const fact = r.factKey !== null && r.validFrom !== null;
    if (fact) later.get(r.kind)?.delete(r.itemId);
    const status = view.asOf !== undefined ? statusAt(r, view.asOf) : r.status;
    if (status !== "active") hide(r.kind, r.itemId, status);
  }
  for (const [kind, ids] of later) for (const id of ids) hide(kind, id, "retired");
  return out;
}

/** Of `ids` of one kind, the hidden ones (hiddenByKindOp for one kind). */
export function* hiddenItemsOp({ kind, ids, view = {} }: { kind: ItemKind; ids: readonly string[]; view?: ItemView }): Op<Map<string, ItemStatus>> {
  return (yield* hiddenByKindOp({ ids: { [kind]: ids }, view })).get(kind) ?? new Map<string, ItemStatus>();
}

/** hiddenByKindOp as its own read. */
export function hiddenByKind<H extends AnyStoreHandle>({ handle, ...a }: { handle: H } & Parameters<typeof hiddenByKindOp>[0]): On<H, Map<ItemKind, Map<string, ItemStatus>>> {
  return read(handle, hiddenByKindOp(a));
}

/** hiddenItemsOp as its own read. */
export function hiddenItems<H extends AnyStoreHandle>({ handle, ...a }: { handle: H } & Parameters<typeof hiddenItemsOp>[0]): On<H, Map<string, ItemStatus>> {
  return read(handle, hiddenItemsOp(a));
}

/**
 * The retrieval hook, for every leg: `items` less the hidden ones (by default the not active; as_of: those not
 * visible then), or with include_retired all of them with `item_status` set on those not active.
 */
export type Marked<T> = T & { item_status?: ItemStatus };

/**
 * The retrieval hook, as a step (for a leg already inside a read: recall's reader.run, remember's): `items` less
 * the hidden ones (by default the not active; as_of: those not visible then), or with include_retired all of them
 * with `item_status` set on those not active. Order is kept.
 */
export function* keepVisibleOp<T>({ kind, items, idOf, view = {} }: { kind: ItemKind; items: T[]; idOf: (item: T) => string; view?: ItemView }): Op<Marked<T>[]> {
  const marked = items as Marked<T>[];
  if (items.length === 0) return marked;
  const hidden = yield* hiddenItemsOp({ kind, ids: items.map(idOf), view });
  if (hidden.size === 0) return marked;
  if (view.includeRetired) return marked.map((item) => (hidden.has(idOf(item)) ? { ...item, item_status: hidden.get(idOf(item)) } : item));
  if (view.includeProposed) return keepProposed({ items: marked, hidden, idOf });
  return marked.filter((item) => !hidden.has(idOf(item)));
}

/** With include_proposed: the hidden items less those proposed, which answer marked. */
function keepProposed<T>({ items, hidden, idOf }: { items: Marked<T>[]; hidden: Map<string, ItemStatus>; idOf: (item: T) => string }): Marked<T>[] {
  return items.flatMap((item) => {
    const status = hidden.get(idOf(item));
    if (status === undefined) return [item];
    return status === "proposed" ? [{ ...item, item_status: status }] : [];
  });
}

/** keepVisibleOp as its own read. */
export async function visibleItems<T>({ handle, ...a }: { handle: AnyStoreHandle } & Parameters<typeof keepVisibleOp<T>>[0]): Promise<Marked<T>[]> {
  if (a.items.length === 0) return a.items as Marked<T>[];
  return read(handle, keepVisibleOp(a));
}

/** Runs a step sequence on a store: read() by default, or inside a transaction the caller already holds. */
export type RunOn = <T>(handle: AnyStoreHandle, op: Op<T>) => Promise<T>;

/** The memory a document is (`memory/<path>.md` of kind memory), or null. */
export function memoryIdOfDocument({ path, kind }: { path: string; kind: string }): string | null {
  return kind === "memory" && path.startsWith("memory/") && path.endsWith(".md") ? path.slice(7, -3) : null;
}

/**
 * Search's hook (both engines, ./search.ts finishSearch): of the fused candidates, those whose memory the view
 * hides are left out (with include_retired, marked). The legs already left the hidden ones out (hiddenRowsFilter)
 * except under as_of, read here from a pool deeper than the page. Candidates of other documents pass unread.
 */
export async function visibleSearchCandidates<C extends { store: string; detail: { path: string; kind: string } }>({ handles, candidates, view, run = (handle, op) => Promise.resolve(read(handle, op)) }: { handles: readonly AnyStoreHandle[]; candidates: C[]; view: ItemView; /** Where the lookup runs: its own read, or (PostgreSQL) the search's open transaction. */ run?: RunOn }): Promise<Marked<C>[]> {
  let out = candidates as Marked<C>[];
  for (const handle of handles) {
    const own = out.filter((c) => c.store === handle.store && memoryIdOfDocument(c.detail) !== null);
    if (own.length === 0) continue;
    if (view.includeProposed && !view.includeRetired) {
      out = await withProposedMarked({ handle, candidates: out, own, view, run });
      continue;
    }
    const kept = await run(handle, keepVisibleOp({ kind: "memory", items: own, idOf: (c) => memoryIdOfDocument(c.detail)!, view }));
    if (view.includeRetired) {
      const marked = new Map(own.map((c, i) => [c, kept[i]] as const));
      out = out.map((c) => marked.get(c) ?? c);
    } else if (kept.length < own.length) {
      const dropped = new Set(own);
      for (const c of kept) dropped.delete(c);
      out = out.filter((c) => !dropped.has(c));
    }
  }
  return out;
}

/** Search's hook under include_proposed: of `own` (this store's memory candidates), the hidden ones left out but the proposed, which stay marked. */
async function withProposedMarked<C extends { store: string; detail: { path: string; kind: string } }>({ handle, candidates, own, view, run }: { handle: AnyStoreHandle; candidates: Marked<C>[]; own: Marked<C>[]; view: ItemView; run: RunOn }): Promise<Marked<C>[]> {
  const hidden = await run(handle, hiddenItemsOp({ kind: "memory", ids: own.map((c) => memoryIdOfDocument(c.detail)!), view }));
  if (hidden.size === 0) return candidates;
  const mine = new Set(own);
  return candidates.flatMap((c) => {
    const status = mine.has(c) ? hidden.get(memoryIdOfDocument(c.detail)!) : undefined;
    if (status === undefined) return [c];
    return status === "proposed" ? [{ ...c, item_status: status }] : [];
  });
}

/** The ids of `kind` that are not active, as the subquery the list filter reads (a kind is one of ITEM_KINDS: written in as a literal). */
function notActiveIds(kind: ItemKind, includeProposed = false): string {
  return `select ist.item_id from item_state ist where ist.kind = '${itemKindLiteral(kind)}' and ist.status ${notShownStatus(includeProposed)}`;
}

/** A kind as it is written into SQL text: one of ITEM_KINDS, never request text. */
function itemKindLiteral(kind: ItemKind): ItemKind {
  if (!(ITEM_KINDS as readonly string[]).includes(kind)) throw new Error(`not an item kind: ${kind}`);
  return kind;
}

/** The statuses a view does not show, as the SQL test of `ist.status`. */
const notShownStatus = (includeProposed: boolean) => (includeProposed ? "not in ('active', 'proposed')" : "<> 'active'");

/**
 * The list routes' filter (Drizzle, both engines): rows of `kind` that are active, by their id column; undefined
 * (no filter) with include_retired. The ids not active are read once (an uncorrelated subquery: SQLite keeps them
 * in a temporary index, PostgreSQL hashes them), and each row is checked against them: a listing still reads its
 * rows once.
 */
export function visibleWhere({ kind, id, includeRetired = false, includeProposed = false }: { kind: ItemKind; id: SQLWrapper; includeRetired?: boolean; /** Proposals waiting for review listed too. */ includeProposed?: boolean }): SQL | undefined {
  if (includeRetired) return undefined;
  return sql`cast(${id} as text) not in (${sql.raw(notActiveIds(kind, includeProposed))})`;
}

/** The list routes' query parameter: retired (and proposed, rejected) items listed too. */
export const listViewQuerySchema = { include_retired: boolParam.optional(), include_proposed: boolParam.optional() };

/** The create inputs of memories, learnings, relations and frames take it: the id of the item (same kind, same store) the new one replaces. */
export const supersedesSchema = itemIdSchema.optional();

/**
 * A kind's fact rule, as supersedingOp applies it (lib/index/facts.ts factsOf): the claim a create input makes, or
 * null when it makes none; the step that records it beside the item written; the input without its fact fields.
 */
export type FactsHook = {
  claimOf: (input: Record<string, unknown>) => { key: string; value: string; validFrom: number } | null;
  record: (a: { store: string; kind: ItemKind; id: string; claim: { key: string; value: string; validFrom: number }; actor: string }) => Op<unknown>;
  strip: <I extends object>(a: { input: I }) => I;
};

/**
 * A create naming `supersedes` or stating a fact (`facts`), written once for every kind that takes them, as steps of
 * the create's own write (proposing() runs them in its one transaction, lib/index/proposals.ts). Before the create,
 * supersedableOp: the old item must be in this store, of this kind and active (else 404 / 409). Once the new id is
 * known, supersedingOp: the old one is retired with superseded_by and the new one records supersedes, both kept, each
 * link in the history, the fact recorded, with the audit entries and ledger rows of any other decision. A create that
 * fails leaves the old item active, and a crash cannot leave both active.
 */
export function* supersedableOp({ store, kind, id }: { store: string; kind: ItemKind; id: string }): Op<void> {
  if (!(yield* itemExists(kind, id, { lock: "share" }))) throw new AppError("not_found", `supersedes: no ${kind} ${id} in store ${store}`, [{ path: "supersedes", message: "not in this store" }]);
  const current = (yield* row(itemStateTable, keyOf(kind, id)))?.status ?? "active";
  if (current !== "active") throw new AppError("item_already_retired", `supersedes: ${kind} ${id} is ${current}; only an active item can be superseded`, [{ path: "supersedes", message: `status is ${current}`, status: current }]);
}

/** supersedableOp's other half: the supersession and the fact of the item just written (`newId`), in its write. */
export function* supersedingOp({ store, kind, newId, supersedes, claim, facts, actor, tokenLabel }: { store: string; kind: ItemKind; newId: string; supersedes?: string; claim: { key: string; value: string; validFrom: number } | null; facts?: FactsHook; actor: string; tokenLabel: string | null }): Op<void> {
  if (supersedes === undefined && claim === null) return;
  // Before this step the item written has a state only when the create merged into an existing one: an agent's
  // merge into a proposal would change what waits for review (people and the local CLI are not held).
  if (workScope.getStore()?.writer?.actor && (yield* row(itemStateTable, keyOf(kind, newId)))?.status === "proposed") throw mergesIntoProposal({ store, kind, id: newId });
  if (supersedes !== undefined) {
    if (newId === supersedes) throw new AppError("conflict", `supersedes: the ${kind} written is ${supersedes} itself (merged into it); nothing was superseded`, [{ path: "supersedes", message: "same item" }]);
    yield* decideItemOp({ store, kind, id: supersedes, to: "retired", reason: `superseded by ${kind} ${newId}`, actor, link: { superseded_by: newId } });
    const now = Date.now();
    const values = { supersedes, reason: `supersedes ${kind} ${supersedes}`, decidedBy: actor, updatedAt: now };
    yield* upsert(itemStateTable, { kind, itemId: newId, status: "active", recordedAt: now, ...values }, (t) => [t.kind, t.itemId] as never, values);
  }
  if (claim && facts) yield* facts.record({ store, kind, id: newId, claim, actor });
  if (supersedes !== undefined) yield* ledgerOverrideStep({ note: `item.supersede ${kind} ${supersedes} by ${newId} in store ${store}`, actor, tokenLabel });
}

/**
 * Forgetting by policy's retirement of one item (lib/index/forgetting.ts), as a step of the run's batch: like
 * decideItemOp's retire (the transition joins the item's history, by `actor`, with `reason`), but an item no longer
 * there or no longer active is skipped (false), not refused: a run's batch goes on past an item decided meanwhile.
 * No audit entry per item: the run writes one for its whole list.
 */
export function* retireByPolicyOp({ kind, id, reason, actor, now }: { kind: ItemKind; id: string; reason: string; actor: string; now: number }): Op<boolean> {
  if (!(yield* itemExists(kind, id, { lock: "share" }))) return false;
  const current = yield* row(itemStateTable, keyOf(kind, id), { lock: "update" });
  const from: ItemStatus = current?.status ?? "active";
  if (from !== "active") return false;
  const transition: ItemTransition = { from, to: "retired", at: now, by: actor, reason };
  const history = [...historyOf(current), transition].slice(-ITEM_STATE_LIMITS.maxHistory);
  const values = { status: "retired" as const, retiredAt: now, reason, decidedBy: actor, history: JSON.stringify(history), updatedAt: now };
  yield* upsert(itemStateTable, { kind, itemId: id, recordedAt: now, ...values }, (t) => [t.kind, t.itemId] as never, values);
  return true;
}
