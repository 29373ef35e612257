import { and, eq, sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { AppError } from "../errors";
import { read, row, sqlRows, tablePair, upsert, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import { withStoreTx, type PgStoreHandle } from "../db/pg-store";
import type { StoreHandle } from "../db/connection";
import { withinWorkScope, workScope } from "../db/work-scope";
import * as sqliteIndex from "../db/schema/index";
import * as pg from "../db/schema/pg/store";
import type { ItemStateRow, ProposalRow } from "../db/schema/index";
import { auditStep } from "../governance/audit";
import { maskCredentials, poisonFlags, poisonFlagsSchema, POISON_MAX_FIELD_CHARS, type PoisonFlag } from "../poison";
import { decideItemOp, heldInTrash, itemAuditTarget, itemNotFound, mergesIntoProposal, itemStateTable, ITEM_STATE_LIMITS, supersedableOp, supersedingOp, type FactsHook, type ItemTransition } from "./item-state";
import { recordFactOp } from "./facts";
import { afterCommit } from "./files-after-commit";
import { ledgerOverrideStep, ledgerRoomStep, type LedgerWho } from "./governed-ledger";
import { TRASH_STATE_LIKE } from "./memory-trash-state";
import { isTrusted, writePolicyOp, type ReviewKind, type WritePolicy } from "./write-policy";

/**
 * Proposals (docs/ARCHITECTURE.md, "Governed memory"): under a store's `review` policy for a kind, a create by an
 * actor the store does not trust, or one the poisoning guard flags (whoever writes it), lands as a proposal. The item
 * is written as any other, and in the same transaction its item_state row (status `proposed`) and its provenance
 * (who, which token label, when, why, the flags): no moment exists, crash or not, in which it is stored and visible.
 * Retrieval already answers only active items; a reviewer approves (→ active), edits then approves, or rejects
 * (→ rejected, kept out), each transition in the item's history with its audit entry and ledger override.
 */
export const proposalsTable = tablePair(sqliteIndex.proposals, pg.proposals);

/** Bounds of the inputs a token controls (SECURITY.md, "Limits"). */
export const PROPOSAL_LIMITS = {
  /** Proposals in one page of the review queue. */
  maxPage: 100,
} as const;

export type ProposalWhy = ProposalRow["why"];
/** What a create answers besides its item when the item landed as a proposal. */
export type ProposalMark = { status: "proposed"; why: ProposalWhy; flags: PoisonFlag[] };
export const proposalMarkSchema = z.strictObject({ status: z.literal("proposed"), why: z.enum(["untrusted", "flagged"]), flags: poisonFlagsSchema });

/**
 * One transaction on the store: `before` (read and locked in it), then `create` (a repository's own write, which
 * nests in it: SQLite's savepoint, a PostgreSQL savepoint), then `after` over its answer; answers both. On SQLite
 * `create` runs synchronously, as every store write there does.
 */
async function inOneWrite<D, R, A>({ handle, before, create, after }: { handle: AnyStoreHandle; before: () => Op<D>; create: (h: AnyStoreHandle, d: D) => R | Promise<R>; after: (r: R, d: D) => Op<A> }): Promise<{ created: R; after: A }> {
  if (handle.kind === "pg") {
    const outer = handle as PgStoreHandle;
    return withStoreTx({
      handle: outer,
      work: async (tx) => {
        const inner = { ...outer, db: tx as unknown as PgStoreHandle["db"] };
        const d = await write(inner, before());
        const created = await create(inner, d);
        return { created, after: await write(inner, after(created, d)) };
      },
    });
  }
  const h = handle as StoreHandle;
  // A memory's file goes in place after the commit (lib/index/files-after-commit.ts): never on disk without its state.
  return afterCommit({
    transaction: () =>
      h.sqlite
        .transaction(() => {
          const d = write(h, before());
          const created = create(h, d);
          if (created instanceof Promise) throw new Error("a SQLite store write ran asynchronously inside a proposal's transaction");
          return { created, after: write(h, after(created, d)) };
        })
        .immediate(),
  });
}

/** A repository create's argument (`{ handle, input, … }`), and the governed create's: the same by store name instead of handle. */
type CreateArgs = { handle: AnyStoreHandle; input: object };
type ByStore<P extends CreateArgs> = Omit<P, "handle"> & { store: string };

/** What the write policy makes of one create: counted at once, a trusted writer's bypass, or a proposal. */
type Decision = { to: "open" } | { to: "bypass" } | { to: "propose"; why: ProposalWhy };

/**
 * A create under the store's write policy, written once for every governed kind (the backends wrap their create
 * with it): open for the kind → the create as before; review and a trusted actor with an unflagged write → the
 * create, the bypass audited and in the ledger ("bypass: trusted"); otherwise the create with the proposal's state,
 * provenance, audit entry and ledger row, and the answer carries `proposal`. `createIn` is the repository's write on
 * the handle given. `isNew` says whether the write made a new item (a learning or relation merged into an existing
 * one changes that one: refused under review as other changes are, mergeUnderReviewOp).
 *
 * One transaction, whatever the create names: the policy is read in it (share-locked on PostgreSQL, under SQLite's
 * write lock), so a policy change commits wholly before the write, which then follows it, or after it: none lets a
 * write through as `open` once `review` has committed. A counted create naming `supersedes` or stating a fact
 * (`facts`) supersedes in it too, with its audit entries and ledger rows (lib/index/item-state.ts supersedingOp). A
 * proposal keeps what it names and states, and supersedes on approval, not before.
 */
export function proposing<P extends CreateArgs, R extends object>({ kind, open, createIn, idOf, actorOf, isNew = () => true, facts }: {
  kind: ReviewKind;
  /** The kind's fact rule (lib/index/facts.ts factsOf): a counted create records its fact; a proposal keeps its claim and applies it when approved. */
  facts?: FactsHook;
  open: (store: string) => Promise<AnyStoreHandle>;
  createIn: (a: P) => R | Promise<R>;
  idOf: (r: R) => string;
  actorOf: (a: ByStore<P>) => string;
  isNew?: (r: R, startedAt: number) => boolean;
}): (a: ByStore<P>) => Promise<R & { proposal?: ProposalMark }> {
  return async (a) => {
    const handle = await open(a.store);
    const actor = actorOf(a);
    const tokenLabel = workScope.getStore()?.writer?.tokenLabel ?? null;
    const flags = poisonFlags({ fields: a.input as Record<string, unknown> });
    const { supersedes, ...rest } = a.input as { supersedes?: string };
    const claim = facts?.claimOf(rest) ?? null;
    const input = facts ? facts.strip({ input: rest }) : rest;
    const decide = (policy: WritePolicy): Decision => {
      if (policy.modes[kind] !== "review") return { to: "open" };
      if (isTrusted({ policy, actor, tokenLabel }) && flags.length === 0) return { to: "bypass" };
      return { to: "propose", why: flags.length > 0 ? "flagged" : "untrusted" };
    };
    const startedAt = Date.now();
    let proposed: ProposalWhy | null = null;
    const { created } = await inOneWrite({
      handle,
      before: function* (): Op<Decision> {
        const d = decide(yield* writePolicyOp({ lock: true }));
        if (d.to !== "propose" && supersedes !== undefined) yield* supersedableOp({ store: a.store, kind, id: supersedes });
        return d;
      },
      create: (h) => createIn({ ...a, input, handle: h } as unknown as P),
      after: function* (r, d) {
        const id = idOf(r);
        if (d.to !== "propose") {
          if (d.to === "bypass" && !isNew(r, startedAt)) yield* mergeUnderReviewOp({ store: a.store, kind, id, why: null });
          yield* supersedingOp({ store: a.store, kind, newId: id, supersedes, claim, facts, actor, tokenLabel });
          if (d.to === "open") return;
          yield* auditStep({ actor, action: "proposal.bypass", target: itemAuditTarget({ store: a.store, kind, id }), reason: "bypass: trusted", details: { store: a.store, kind, id, token_label: tokenLabel } });
          yield* ledgerOverrideStep({ note: `write.bypass ${kind} ${id} in store ${a.store}: bypass: trusted`, actor, tokenLabel });
          return;
        }
        const why = d.why;
        if (!isNew(r, startedAt)) return yield* mergeUnderReviewOp({ store: a.store, kind, id, why });
        const now = Date.now();
        const transition: ItemTransition = { from: "proposed", to: "proposed", at: now, by: actor, reason: `proposed (${why})` };
        const values = { status: "proposed" as const, reason: `proposed (${why})`, decidedBy: actor, updatedAt: now, history: JSON.stringify([transition]), ...(supersedes !== undefined ? { supersedes } : {}), ...(claim ? { factKey: claim.key, factValue: claim.value, validFrom: claim.validFrom } : {}) };
        yield* upsert(itemStateTable, { kind, itemId: id, recordedAt: now, ...values }, (t) => [t.kind, t.itemId] as never, values);
        const provenance = { proposedBy: actor, tokenLabel, proposedAt: now, why, flags: JSON.stringify(flags) };
        yield* upsert(proposalsTable, { kind, itemId: id, ...provenance }, (t) => [t.kind, t.itemId] as never, provenance);
        yield* auditStep({ actor, action: "proposal.create", target: itemAuditTarget({ store: a.store, kind, id }), reason: `proposed (${why})`, details: { store: a.store, kind, id, why, token_label: tokenLabel, flags: flags.map((f) => f.flag) } });
        yield* ledgerOverrideStep({ note: `proposal.create ${kind} ${id} in store ${a.store} (${why})`, actor, tokenLabel });
        proposed = why;
      },
    });
    if (proposed === null) return created;
    return { ...created, proposal: { status: "proposed", why: proposed, flags } };
  };
}

/**
 * A write that merged into an existing item (a relation written again, a learning seen again) under review: the
 * merge changes that item (its weight and attributes, its seen count and confidence), so an agent's merge into a
 * proposal is refused whoever the agent is (409 review_pending: a proposal changes only by being approved with an
 * edit), and where the write would have been a proposal (`why`) its merge into any item is refused as a change of
 * an existing item is (403 review_required); the merge rolls back with it. People and the local CLI are not held,
 * as for updates (assertAgentMayChange).
 */
function* mergeUnderReviewOp({ store, kind, id, why }: { store: string; kind: ReviewKind; id: string; /** null: a trusted agent's bypass. */ why: ProposalWhy | null }): Op<void> {
  const writer = workScope.getStore()?.writer;
  if (!writer?.actor) return;
  const state = yield* row(itemStateTable, (t) => and(eq(t.kind, kind), eq(t.itemId, id)) as SQL);
  if (state?.status === "proposed") throw mergesIntoProposal({ store, kind, id });
  if (why === null) return;
  const because = why === "flagged" ? "the write is flagged" : `${writer.actor} is not trusted there`;
  throw new AppError("review_required", `store ${store} reviews ${kind} writes and ${because}: this ${kind} would merge into ${kind} ${id} and change it, which only a trusted agent or a reviewer may do`, [{ path: "id", message: why === "flagged" ? "flagged" : "not trusted" }]);
}

/** An answer that wraps its item (`{ thought }`, `{ node }`, `{ frame }`): the item under `key`, its `proposal` beside it. */
export function wrappedWithProposal<K extends string, T extends { proposal?: ProposalMark }>({ key, item }: { key: K; item: T }): Record<K, Omit<T, "proposal">> & { proposal?: ProposalMark } {
  const { proposal, ...rest } = item;
  return { [key]: rest, ...(proposal ? { proposal } : {}) } as Record<K, Omit<T, "proposal">> & { proposal?: ProposalMark };
}

/** A proposal as the review queue shows it. */
export type Proposal = { kind: ReviewKind; id: string; status: ItemStateRow["status"]; proposed_by: string; token_label: string | null; proposed_at: number; why: ProposalWhy; flags: PoisonFlag[]; supersedes: string | null; excerpt: string | null };

const EXCERPT_CHARS = 280;

/** Each kind's excerpt column, as SQL text both engines run (table and columns fixed here, ids bound). */
const EXCERPTS: Record<ReviewKind, { table: string; id: string; text: string }> = {
  // A memory's text is its file (SQLite) or row (PostgreSQL); both index its first chunk.
  memory: { table: "memories m left join documents d on d.path = 'memory/' || m.path || '.md' left join chunks c on c.doc_id = d.doc_id and c.chunk_index = 0", id: "m.path", text: "coalesce(m.summary, c.text, m.path)" },
  learning: { table: "learnings", id: "cast(id as text)", text: "predicate || ': ' || description" },
  thought: { table: "thoughts", id: "id", text: "content" },
  node: { table: "kg_node", id: "id", text: "display_name" },
  relation: { table: "kg_relation", id: "id", text: "from_id || ' ' || relationship_type || ' ' || to_id" },
  frame: { table: "kg_frame", id: "id", text: "node_id || ' ' || properties" },
};

function* excerptsOp(page: { kind: ReviewKind; itemId: string }[]): Op<Map<string, string>> {
  const out = new Map<string, string>();
  for (const kind of new Set(page.map((p) => p.kind))) {
    const ids = page.filter((p) => p.kind === kind).map((p) => p.itemId);
    const e = EXCERPTS[kind];
    // Read as far as the poisoning scan reads, so a credential that starts in the excerpt is found whole and masked.
    const found = yield* sqlRows<{ id: string; text: string | null }>(sql`select ${sql.raw(e.id)} as id, substr(${sql.raw(e.text)}, 1, ${POISON_MAX_FIELD_CHARS}) as text from ${sql.raw(e.table)} where ${sql.raw(e.id)} in ${ids}`);
    for (const r of found) out.set(`${kind}/${r.id}`, maskCredentials({ text: r.text ?? "" }).slice(0, EXCERPT_CHARS));
  }
  return out;
}

function flagsOf(text: string): PoisonFlag[] {
  try {
    const parsed = poisonFlagsSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/** The review queue: proposals still waiting, newest first, one page (by kind and proposer when asked). */
export function listProposals<H extends AnyStoreHandle>({ handle, kind, actor, limit, offset }: { handle: H; kind?: ReviewKind; actor?: string; limit: number; offset: number }): On<H, { total: number; proposals: Proposal[] }> {
  return read(handle, function* () {
    const where = sql.join([sql`s.status = 'proposed'`, sql`p.item_id not like ${TRASH_STATE_LIKE}`, ...(kind ? [sql`p.kind = ${kind}`] : []), ...(actor ? [sql`p.proposed_by = ${actor}`] : [])], sql` and `);
    const from = sql`from proposals p join item_state s on s.kind = p.kind and s.item_id = p.item_id where ${where}`;
    const [{ n }] = yield* sqlRows<{ n: number | string }>(sql`select count(*) as n ${from}`);
    const page = yield* sqlRows<{ kind: ReviewKind; itemId: string; status: ItemStateRow["status"]; proposedBy: string; tokenLabel: string | null; proposedAt: number | string; why: ProposalWhy; flags: string; supersedes: string | null }>(
      sql`select p.kind, p.item_id as "itemId", s.status, p.proposed_by as "proposedBy", p.token_label as "tokenLabel", p.proposed_at as "proposedAt", p.why, p.flags, s.supersedes ${from} order by p.proposed_at desc, p.kind, p.item_id limit ${limit} offset ${offset}`,
    );
    const excerpts = yield* excerptsOp(page);
    return {
      total: Number(n),
      proposals: page.map((p) => ({ kind: p.kind, id: p.itemId, status: p.status, proposed_by: p.proposedBy, token_label: p.tokenLabel, proposed_at: Number(p.proposedAt), why: p.why, flags: flagsOf(p.flags), supersedes: p.supersedes, excerpt: excerpts.get(`${p.kind}/${p.itemId}`) ?? null })),
    };
  });
}

/** One proposal's provenance and state; 404 (as for an id never written) when there is none in this store. */
function* proposalOp({ store, kind, id, lock = false }: { store: string; kind: ReviewKind; id: string; lock?: boolean }): Op<{ provenance: ProposalRow; state: ItemStateRow }> {
  // A deleted proposal waits in the trash with its memory: decided only once restored, never by its trash key.
  if (heldInTrash({ kind, id })) throw itemNotFound({ store, kind, id });
  const provenance = yield* row(proposalsTable, (t) => and(eq(t.kind, kind), eq(t.itemId, id)) as SQL);
  const state = yield* row(itemStateTable, (t) => and(eq(t.kind, kind), eq(t.itemId, id)) as SQL, lock ? { lock: "update" } : {});
  if (!provenance || !state) throw itemNotFound({ store, kind, id });
  return { provenance: provenance as ProposalRow, state };
}

/** One proposal's provenance and status; 404 as for an id never written when there is none in this store. */
export function getProposal<H extends AnyStoreHandle>({ handle, store, kind, id }: { handle: H; store: string; kind: ReviewKind; id: string }): On<H, { proposed_by: string; status: ItemStateRow["status"] }> {
  return read(handle, function* () {
    const { provenance, state } = yield* proposalOp({ store, kind, id });
    return { proposed_by: provenance.proposedBy, status: state.status };
  });
}

function checkDecidable({ kind, id, actor, provenance, state }: { kind: ReviewKind; id: string; actor: string; provenance: ProposalRow; state: ItemStateRow }) {
  if (state.status !== "proposed") throw new AppError("not_proposed", `${kind} ${id} is ${state.status}, not a proposal waiting for review`, [{ path: "id", message: `status is ${state.status}`, status: state.status }]);
  if (provenance.proposedBy === actor) throw new AppError("self_review", `${actor} proposed ${kind} ${id}: another reviewer must approve or reject it`, [{ path: "id", message: "own proposal" }]);
}

export type ProposalDecision = { kind: ReviewKind; id: string; status: "active" | "rejected"; transition: ItemTransition; superseded: string | null };

/**
 * A reviewer's edit of a proposal before approving it: the kind's own update on the handle it is given (the
 * approval's transaction; synchronous on SQLite), and the fields it sets, named in the approval's audit entry and
 * ledger row.
 */
export type ProposalEdit = { fields: string[]; apply: (h: AnyStoreHandle) => unknown };

/**
 * Approve (→ active: it answers search, recall, remember and the lists at once; a `supersedes` it named is retired
 * now) or reject (→ rejected: kept, out of every answer) one proposal, in one store write with the audit entries and
 * its ledger row. With an `edit`, the edit and the approval are that one write: the proposal locked and checked
 * (still proposed, not the reviewer's own) and the ledger's room for the decision's rows checked first, then the
 * edit, then the approval naming the fields edited; refused or failed at any step, the proposal keeps its text and
 * stays proposed (a memory's new file is put in place only once it commits: lib/index/files-after-commit.ts).
 */
export async function decideProposal({ handle, store, kind, id, to, reason, actor, ledger, edit, trust, now = Date.now() }: { handle: AnyStoreHandle; store: string; kind: ReviewKind; id: string; to: "active" | "rejected"; reason: string; actor: string; ledger: LedgerWho; edit?: ProposalEdit; /** An agent without the admin scope: its trust in the store is checked again in the decision's transaction. */ trust?: { tokenLabel: string | null }; now?: number }): Promise<ProposalDecision & { override_id: string }> {
  const decide = function* (): Op<ProposalDecision & { override_id: string }> {
    const { provenance, state } = yield* decidableOp({ store, kind, id, actor, ledger, trust });
    const transition: ItemTransition = { from: "proposed", to, at: now, by: actor, reason };
    let history: ItemTransition[] = [];
    try {
      history = JSON.parse(state.history) as ItemTransition[];
    } catch {
      history = [];
    }
    // A fact the proposal stated is written as one when approved (its claim set aside until then: a proposal retires nothing).
    const claim = to === "active" && state.factKey !== null && state.factValue !== null ? { key: state.factKey, value: state.factValue, validFrom: state.validFrom ?? now } : null;
    const values = { status: to, reason, decidedBy: actor, updatedAt: now, history: JSON.stringify([...history, transition].slice(-ITEM_STATE_LIMITS.maxHistory)), ...(claim ? { factKey: null, factValue: null } : {}) };
    yield* upsert(itemStateTable, { kind, itemId: id, recordedAt: state.recordedAt, ...values }, (t) => [t.kind, t.itemId] as never, values);
    let superseded: string | null = null;
    if (claim) {
      const outcome = yield* recordFactOp({ store, kind, id, claim, actor, now });
      superseded = outcome.supersedes.at(-1) ?? null;
    }
    if (to === "active" && state.supersedes) {
      const old = yield* row(itemStateTable, (t) => and(eq(t.kind, kind), eq(t.itemId, state.supersedes!)) as SQL);
      if ((old?.status ?? "active") === "active") {
        yield* decideItemOp({ store, kind, id: state.supersedes, to: "retired", reason: `superseded by ${kind} ${id}`, actor, now, link: { superseded_by: id } });
        superseded = state.supersedes;
      }
    }
    const edited = edit ? edit.fields : null;
    yield* auditStep({ actor, action: to === "active" ? "proposal.approve" : "proposal.reject", target: itemAuditTarget({ store, kind, id }), reason, details: { store, kind, id, from: "proposed", to, proposed_by: provenance.proposedBy, superseded, ...(edited ? { edited } : {}) } });
    const verb = to === "active" ? (edited ? `approve (edited: ${edited.join(", ") || "nothing"})` : "approve") : "reject";
    const override_id = yield* ledgerOverrideStep({ note: `proposal.${verb} ${kind} ${id} in store ${store}: ${reason}`, actor, ...ledger });
    return { kind, id, status: to, transition, superseded, override_id };
  };
  if (!edit) return Promise.resolve(write(handle, decide()));
  if (to !== "active") throw new Error("only an approval carries an edit");
  const { after } = await inOneWrite({
    handle,
    before: () => decidableOp({ store, kind, id, actor, ledger, trust }),
    create: (h) => withinWorkScope({ part: { writer: undefined }, fn: () => edit.apply(h) }),
    after: decide,
  });
  return after;
}

/**
 * The proposal locked for its decision: still proposed (409 not_proposed), not `actor`'s own (403 self_review), an
 * agent still trusted in the store (`trust`: the write policy read share-locked, so a policy change waits for the
 * decision or is seen by it; 403 review_required), and room in the ledger for the decision's rows (ledgerRoomStep:
 * 507 when full), each refused before anything is written.
 */
function* decidableOp({ store, kind, id, actor, ledger, trust }: { store: string; kind: ReviewKind; id: string; actor: string; ledger: LedgerWho; trust?: { tokenLabel: string | null } }): Op<{ provenance: ProposalRow; state: ItemStateRow }> {
  const found = yield* proposalOp({ store, kind, id, lock: true });
  checkDecidable({ kind, id, actor, ...found });
  if (trust && !isTrusted({ policy: yield* writePolicyOp({ lock: true }), actor, tokenLabel: trust.tokenLabel })) throw notTrusted({ store, actor });
  yield* ledgerRoomStep({ actor, caller: ledger.caller });
  return found;
}

const notTrusted = ({ store, actor }: { store: string; actor: string }) => new AppError("review_required", `${actor} is not trusted in store ${store}: proposals are decided by a trusted agent, an admin token or a dashboard editor`, [{ path: "token", message: "not trusted" }]);

/**
 * Under a store's `review` policy for the kind, an agent's change to an existing item — an update, a move, a delete,
 * an invalidate or restore, a restore from the trash — must come from a trusted agent and carry nothing the
 * poisoning guard flags (403 review_required: write a new item with `supersedes`, which waits for review); a proposal
 * changes only by being approved with an edit (409 review_pending). People (the dashboard's editors, who review) and
 * the local CLI are not held: only a request carrying an agent's token is. A made-up id answers the same as a real one.
 */
export async function assertAgentMayChange({ handle, kind, id, fields, proposalsDecideThemselves = false }: { handle: AnyStoreHandle; kind: ReviewKind; id?: string; fields?: Record<string, unknown>; /** An invalidate or restore: a proposal answers its own 409 not_proposed there. */ proposalsDecideThemselves?: boolean }): Promise<void> {
  const writer = workScope.getStore()?.writer;
  if (!writer?.actor) return;
  const actor = writer.actor;
  const { policy, status } = await read(handle, function* () {
    const policy = yield* writePolicyOp();
    const state = policy.modes[kind] === "review" && id !== undefined && !heldInTrash({ kind, id }) ? yield* row(itemStateTable, (t) => and(eq(t.kind, kind), eq(t.itemId, id)) as SQL) : undefined;
    return { policy, status: state?.status ?? "active" };
  });
  if (policy.modes[kind] !== "review") return;
  const what = id === undefined ? `a ${kind}` : `${kind} ${id}`;
  if (status === "proposed" && !proposalsDecideThemselves) throw new AppError("review_pending", `${what} is a proposal waiting for review in store ${handle.store}: a reviewer approves it (with an edit if it needs one)`, [{ path: "id", message: "proposed" }]);
  if (!isTrusted({ policy, actor, tokenLabel: writer.tokenLabel })) {
    throw new AppError("review_required", `store ${handle.store} reviews ${kind} writes and ${actor} is not trusted there: write a new ${kind} naming supersedes (it waits for review) instead of changing ${what}`, [{ path: "id", message: "not trusted" }]);
  }
  const flags = fields ? poisonFlags({ fields }) : [];
  if (flags.length > 0) throw new AppError("review_required", `the change to ${what} is flagged (${flags.map((f) => `${f.flag}: ${f.rule}`).join(", ")}): write it as a new ${kind} naming supersedes, which waits for review`, [{ path: flags[0].field, message: "flagged" }]);
}

/** A change of an existing item, held by assertAgentMayChange first (the backends wrap their updates and deletes with it). */
export function reviewedChange<A extends { store: string }, R>({ kind, open, change, idOf, fieldsOf }: { kind: ReviewKind; open: (store: string) => Promise<AnyStoreHandle>; change: (a: A) => Promise<R>; idOf: (a: A) => string | undefined; fieldsOf?: (a: A) => Record<string, unknown> }): (a: A) => Promise<R> {
  return async (a) => {
    await assertAgentMayChange({ handle: await open(a.store), kind, id: idOf(a), fields: fieldsOf?.(a) });
    return change(a);
  };
}

/** Whether an agent may decide proposals in this store: a trusted agent, or a token with the admin scope. */
export async function assertAgentMayReview({ handle, actor, tokenLabel, admin }: { handle: AnyStoreHandle; actor: string; tokenLabel: string | null; admin: boolean }): Promise<void> {
  if (admin) return;
  const policy = await read(handle, writePolicyOp());
  if (!isTrusted({ policy, actor, tokenLabel })) throw notTrusted({ store: handle.store, actor });
}
