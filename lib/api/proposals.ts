import { z } from "zod";
import { assertStoresWritable } from "../db/store-lifecycle";
import type { AgentPrincipal } from "../auth/tokens";
import { governance } from "../backend/governance";
import { currentEngine } from "../db/engine";
import { isAppError, AppError } from "../errors";
import { itemNotFound, itemReasonSchema, itemIdSchema } from "../index/item-state";
import { updateMemorySchema } from "../index/memories";
import { assertAgentMayReview, decideProposal, getProposal, listProposals, PROPOSAL_LIMITS, type Proposal, type ProposalDecision, type ProposalEdit } from "../index/proposals";
import { readWritePolicy, reviewKindSchema, setWritePolicy, writePolicyInputSchema, type ReviewKind, type WritePolicy, type WritePolicyView } from "../index/write-policy";
import { updateFrame, updateFrameInputSchema } from "../graph/frames";
import { updateNode, updateNodeInputSchema } from "../graph/nodes";
import { updateRelation, updateRelationInputSchema } from "../graph/relations";
import type { AnyStoreHandle } from "../db/port";
import { storeEngineOf } from "../stores/backend";
import { storeNameSchema } from "../db/store-names";
import { offsetSchema } from "../common";
import { actorFor, ledgerWho, type Who } from "./items";

/**
 * Write policy and the review queue for every surface (REST, MCP, CLI, dashboard): lib/index/write-policy.ts and
 * lib/index/proposals.ts with who asked, the ledger override of each decision, and edit-then-approve.
 */

const open = (store: string) => storeEngineOf(currentEngine()).open(store);

/** Route params of /stores/{store}/proposals/{kind}/{id}/…: a governed kind, addressed by the item's own id. */
export const proposalParams = z.object({ store: storeNameSchema, kind: reviewKindSchema, id: itemIdSchema }).strict();

export const listProposalsQuerySchema = z
  .object({
    kind: reviewKindSchema.optional(),
    actor: z.string().trim().min(1).max(200).optional(),
    limit: z.coerce.number().int().min(1).max(PROPOSAL_LIMITS.maxPage, { message: `limit: at most ${PROPOSAL_LIMITS.maxPage} proposals per page (maxPage)` }).default(50),
    offset: offsetSchema,
  })
  .strict();

/** Edit-then-approve: each kind's correction is its own update's input (learnings and thoughts have none). */
const EDIT_SCHEMAS: Partial<Record<ReviewKind, z.ZodType>> = {
  memory: updateMemorySchema.omit({ path: true, move_to: true }),
  node: updateNodeInputSchema,
  relation: updateRelationInputSchema,
  frame: z.object(updateFrameInputSchema.shape).strict(),
};

export const approveProposalSchema = z
  .object({
    /** Why it may count (kept in its history); optional: "approved" when left out. */
    reason: itemReasonSchema.optional(),
    /** The corrected content, as the kind's own update takes it: applied and approved in one transaction. */
    edit: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export const rejectProposalSchema = z.object({ reason: itemReasonSchema }).strict();

export type WritePolicyAnswer = WritePolicyView & { store: string };

export async function writePolicyIn({ store }: { store: string }): Promise<WritePolicyAnswer> {
  return { store, ...(await readWritePolicy({ handle: await open(store) })) };
}

/** Change a store's write policy (admin): the audit entry and the ledger override (old → new) commit with it. */
export async function setWritePolicyIn({ store, input, who }: { store: string; input: z.output<typeof writePolicyInputSchema>; who: Who }): Promise<WritePolicyAnswer & { old: WritePolicy; override_id: string }> {
  await assertStoresWritable([store]);
  const { old, policy, override_id } = await setWritePolicy({ handle: await open(store), store, input, actor: actorFor(who), ledger: ledgerWho(who) });
  return { store, ...policy, old, override_id };
}

export async function proposalsIn({ store, kind, actor, limit, offset }: { store: string; kind?: ReviewKind; actor?: string; limit: number; offset: number }): Promise<{ total: number; proposals: Proposal[]; next_offset: number | null }> {
  const page = await listProposals({ handle: await open(store), kind, actor, limit, offset });
  return { ...page, next_offset: offset + page.proposals.length < page.total ? offset + page.proposals.length : null };
}

async function openProposalStore({ store, kind, id }: { store: string; kind: ReviewKind; id: string }) {
  try {
    return await open(store);
  } catch (e) {
    if (isAppError(e) && e.code === "not_found") throw itemNotFound({ store, kind, id });
    throw e;
  }
}

/**
 * The edit, parsed by the kind's own update schema (400 naming the field), as that update on the handle the approval
 * gives it (lib/index/proposals.ts decideProposal: one transaction with the approval).
 */
function editOf({ kind, id, edit, actor }: { kind: ReviewKind; id: string; edit: Record<string, unknown>; actor: string }): ProposalEdit {
  const schema = EDIT_SCHEMAS[kind];
  if (!schema) throw new AppError("unprocessable", `a ${kind} has no update: approve or reject it as proposed`, [{ path: "edit", message: `no edit for a ${kind}` }]);
  const parsed = schema.safeParse(edit);
  if (!parsed.success) throw new AppError("invalid_request", `edit: ${parsed.error.issues[0]?.message ?? "invalid"}`, parsed.error.issues.map((i) => ({ path: ["edit", ...i.path].join("."), message: i.message })));
  const input = parsed.data as Record<string, unknown>;
  const fields = Object.keys(input).filter((k) => input[k] !== undefined);
  const apply = (handle: AnyStoreHandle) => {
    if (kind === "memory") return storeEngineOf(currentEngine()).updateMemoryIn({ handle, input: { ...input, path: id } as never, actor });
    if (kind === "node") return updateNode({ handle, id, input: input as never });
    if (kind === "relation") return updateRelation({ handle, id, input: input as never });
    return updateFrame({ handle, id, input: input as never });
  };
  return { fields, apply };
}

/**
 * Approve (optionally with an edit) or reject one proposal: refused on an archived store (409), for another store's
 * or a made-up id (404, the same), when it is not proposed (409 not_proposed) or is the reviewer's own (403
 * self_review), or while the ledger has no room for an agent's decision (507); the edit, the decision, its audit
 * entry and its ledger override in one write.
 */
export async function decideProposalIn({ store, kind, id, to, reason, edit, who }: { store: string; kind: ReviewKind; id: string; to: "active" | "rejected"; reason?: string; edit?: Record<string, unknown>; who: Who }): Promise<ProposalDecision & { edited: boolean; override_id: string }> {
  await assertStoresWritable([store]);
  const handle = await openProposalStore({ store, kind, id });
  const actor = actorFor(who);
  // An agent reviews only where it is trusted (or holds the admin scope); people reach this through the dashboard's editor role.
  if ("principal" in who) {
    // Its own proposal says so first (self_review), whoever the proposer is.
    const proposal = await getProposal({ handle, store, kind, id });
    if (proposal.proposed_by === actor) throw new AppError("self_review", `${actor} proposed ${kind} ${id}: another reviewer must approve or reject it`, [{ path: "id", message: "own proposal" }]);
    await assertAgentMayReview({ handle, actor, tokenLabel: who.principal.label, admin: who.principal.scopes.includes("admin") });
  }
  const change = edit === undefined ? undefined : editOf({ kind, id, edit, actor });
  const why = reason ?? (edit !== undefined ? "approved with an edit" : "approved");
  // An agent's trust is read again inside the decision's transaction: a policy changed since the check above holds.
  const trust = "principal" in who && !who.principal.scopes.includes("admin") ? { tokenLabel: who.principal.label } : undefined;
  const decision = await decideProposal({ handle, store, kind, id, to, reason: why, actor, ledger: ledgerWho(who), edit: change, trust });
  return { ...decision, edited: edit !== undefined };
}

/**
 * Open a dialectic session on a proposal (an agent: the session's requestor): its topic names the item, so the
 * review can be argued before it is decided. 404 as for any proposal not there; 409 when it is no longer proposed.
 */
export async function openProposalDialecticIn({ store, kind, id, principal }: { store: string; kind: ReviewKind; id: string; principal: AgentPrincipal }) {
  const proposal = await getProposal({ handle: await openProposalStore({ store, kind, id }), store, kind, id });
  if (proposal.status !== "proposed") throw new AppError("not_proposed", `${kind} ${id} is ${proposal.status}, not a proposal waiting for review`, [{ path: "id", message: `status is ${proposal.status}`, status: proposal.status }]);
  const topic = `review proposal item:${store}/${kind}/${id} (proposed by ${proposal.proposed_by})`;
  return governance().createDialecticSession({ input: { topic, session_type: "proposal" }, agentId: principal.agentId });
}
