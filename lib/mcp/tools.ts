/**
 * The MCP tool catalog, one row a tool: the matching REST route's scope, response schema and zod input (plus its
 * path params: `store`, `id`, ...) and the one domain call it makes. Nothing here re-implements domain logic.
 */
import { deletedResponse } from "../api/responses/common";
import { recallBackend } from "../recall/backend";
import { messagePostedResponse, sessionCreatedResponse, sessionView } from "../api/responses/dialectic";
import { categoryBrowseResponse, chunkDetail, memoryListResponse, memoryTrashReadOrListResponse, memoryWithBody, recentMemoriesResponse, searchResponse } from "../api/responses/documents";
import { storeHealthResponse } from "../api/responses/embeddings";
import { evidenceLinkResponse, evidenceUnlinkedResponse, frameResponse, graphDeletedResponse, nodeDeletedResponse, nodeDetailResponse, nodeListResponse, nodeResponse, relationResponse, rememberResponse } from "../api/responses/graph";
import { runFinishedResponse, runRecordedResponse, taskCreatedResponse, taskStatusResponse, validationRecordedResponse } from "../api/responses/ledger";
import { recallResponse, traceRecordedResponse } from "../api/responses/recall";
import { storeListResponse } from "../api/responses/stores";
import { z, type ZodType } from "zod";
import { actorOf } from "../auth/actor";
import { canUseStore, type AgentPrincipal, type Scope } from "../auth/tokens";
import { storeItemParams, storeParams } from "../api/params";
import { callerOf } from "../api/respond";
import { createSessionSchema, postMessageSchema } from "../governance/dialectic";
import { governance } from "../backend/governance";
import { stores } from "../stores/backend";
import { createTaskSchema, finishRunSchema, recordValidationSchema, startRunSchema } from "../governance/ledger";
import { evidenceKeySchema, linkEvidenceInputSchema } from "../graph/evidence";
import { createFrameInputSchema, updateFrameInputSchema } from "../graph/frames";
import { createNodeInputSchema, listNodesQuerySchema, updateNodeInputSchema } from "../graph/nodes";
import { createRelationInputSchema, updateRelationInputSchema } from "../graph/relations";
import { rememberInputSchema } from "../graph/remember";
import { thinkInputSchema } from "../graph/thoughts";
import { graphBackend } from "../graph/backend";
import { chunkIdSchema } from "../index/ingest";
import { getConfig } from "../config";
import { categoryPageSchema, categoryPathSchema, createMemorySchema, memoryFilterSchema, memoryPathSchema, restoreMemorySchema, trashIdSchema, updateMemorySchema } from "../index/memories";
import { searchInputSchema } from "../index/search";
import { storeHealthReportFor } from "../metrics/health";
import { learningInputSchema, traceInputSchema } from "../recall/descriptors";
import { recallInputSchema } from "../recall/recall";
import { clientIdSchema } from "../common";
import { ownedRefSchema } from "../governance/owned-ids";
import { activityPageResponse, activitySummaryResponse } from "../api/responses/activity";
import { evaluateStartResponse, selfRecallResponse } from "../api/responses/self-recall";
import { itemDecisionResponse, itemHistoryResponse } from "../api/responses/items";
import { itemParams } from "../api/item-routes";
import { approveProposalSchema, decideProposalIn, listProposalsQuerySchema, proposalParams, proposalsIn, rejectProposalSchema, setWritePolicyIn, writePolicyIn, openProposalDialecticIn } from "../api/proposals";
import { frameCreatedResponse, learningCreatedResponse, memoryCreatedResponse, nodeCreatedResponse, proposalDecisionResponse, proposalListResponse, relationCreatedOrProposedResponse, thoughtCreatedResponse, writePolicyResponse, writePolicySetResponse } from "../api/responses/proposals";
import { sessionCreatedResponse as proposalSessionResponse } from "../api/responses/dialectic";
import { wrappedWithProposal } from "../index/proposals";
import { writePolicyInputSchema } from "../index/write-policy";
import { decideItemIn, itemHistoryIn } from "../api/items";
import { contradictionsQuerySchema, listContradictionsIn } from "../api/contradictions";
import { contradictionsResponse } from "../api/responses/items";
import { itemDecisionSchema } from "../index/item-state";
import { evaluateInputSchema, getSelfRecall, startEvaluation } from "../eval/self-recall";
import { activityFilterSchema, activitySummarySchema, assertStoreNamedWhenLimited, listActivity, summarizeActivity } from "../governance/activity";
import { countedRetrieval } from "../governance/retrieval-counts";
import { forgetPolicyResponse, forgetRunResponse } from "../api/responses/forgetting";
import { forgetPolicyIn, runForgettingIn, setForgetPolicyIn } from "../api/forgetting";
import { forgetPolicyInputSchema, forgetRunInputSchema } from "../index/forgetting";

export type ToolContext = { principal: AgentPrincipal };

export type ToolDef = {
  name: string;
  description: string;
  /** Minimum scope, as on the matching REST route. */
  scope: Scope;
  /** The result, in the wire's snake_case: the same schema as the matching REST route's response (see lib/api/contract.ts). */
  output: ZodType;
  input: ZodType;
  run: (args: never, ctx: ToolContext) => unknown;
};

function tool<S extends ZodType>(def: { name: string; description: string; scope: Scope; output: ZodType; input: S; run: (args: z.output<S>, ctx: ToolContext) => unknown }): ToolDef {
  return def as ToolDef;
}

const storeShape = storeParams.shape;
/** A store item's id and the fields to change (the PATCH route's body under `changes`). */
const withChanges = <C extends ZodType>(changes: C) => z.object({ ...storeItemParams.shape, changes }).strict();
const sessionIdShape = { session_id: ownedRefSchema };
const taskIdShape = { task_id: ownedRefSchema };

const agentOf = (ctx: ToolContext) => ctx.principal.agentId;
const actorIn = (ctx: ToolContext) => actorOf(ctx.principal);
/** The same caller the REST routes build: agent id, and admin only for an unrestricted admin token. */
const callerIn = (ctx: ToolContext) => callerOf(ctx.principal);

const indexTools: ToolDef[] = [
  tool({ name: "search", scope: "read", output: searchResponse, input: searchInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => countedRetrieval({ kind: "search", agentId: agentOf(ctx), store, work: () => stores().search({ store, input }) }),
    description: "Search a store's documents and memories (mode fts | vector | hybrid; group=document for each document once with its best passages), with filters; same as POST /stores/{store}/search. effective_mode says what answered, fallback why vectors did not, reason why an answer is empty or weak (store_empty, no_match, below_similarity_floor, backlog, model_mismatch, provider_error, vectors_unavailable); explain=true adds each stage and why each hit ranked where it did. q must not be empty." }),
  tool({ name: "read_chunk", scope: "read", output: chunkDetail, input: z.object({ ...storeShape, id: chunkIdSchema }).strict(), run: ({ store, id }) => stores().getChunk({ store, chunkId: id }),
    description: "Read one chunk (text, path, position) by its 32-hex chunk id from a search hit." }),
  tool({ name: "query_memories", scope: "read", output: memoryListResponse, input: memoryFilterSchema.safeExtend(storeShape), run: ({ store, ...filter }) => stores().listMemories({ store, filter }),
    description: "List memories by category (recursive), tags, updated range, source; sorted and paged." }),
  tool({ name: "recent_memories", scope: "read", output: recentMemoriesResponse, input: z.object({ ...storeShape, limit: memoryFilterSchema.shape.limit.default(10) }).strict(), run: async ({ store, limit }) => ({ memories: (await stores().listMemories({ store, filter: memoryFilterSchema.parse({ limit: String(limit) }) })).memories }),
    description: "The most recently updated memories of a store." }),
  tool({ name: "list_memories", scope: "read", output: categoryBrowseResponse, input: z.object({ ...storeShape, parent: categoryPathSchema.optional(), limit: memoryFilterSchema.shape.limit, offset: memoryFilterSchema.shape.offset, categories_offset: categoryPageSchema.shape.offset }).strict(), run: async ({ store, parent, limit, offset, categories_offset }) => {
      const { total, memories } = await stores().listMemories({ store, filter: memoryFilterSchema.parse({ category: parent, limit, offset }) });
      const page = await stores().listCategoryChildren({ store, parent: parent ?? null, limit: categoryPageSchema.shape.limit.parse(undefined), offset: categories_offset });
      return { parent: parent ?? null, categories: page.categories, categories_total: page.total, categories_next_offset: page.next_offset, total, memories };
    },
    description: "Browse the category tree: a page of the child categories of `parent` (root when absent; `categories_offset` continues it) and a page of the memories under it (recursive, newest first)." }),
  tool({ name: "read_memory", scope: "read", output: memoryWithBody, input: z.object({ ...storeShape, path: memoryPathSchema }).strict(), run: ({ store, path }) => stores().getMemory({ store, memoryPath: path }),
    description: "Read one memory (frontmatter fields and body) by its path, e.g. projects/dualmind/decisions.md." }),
  tool({ name: "write_memory", scope: "write", output: memoryCreatedResponse, input: createMemorySchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => stores().createMemory({ store, input, actor: actorIn(ctx) }),
    description: "Create a memory: a markdown file under memory/<path> (file first, then the index). An existing path is a conflict; use update_memory." }),
  tool({ name: "update_memory", scope: "write", output: memoryWithBody, input: updateMemorySchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => stores().updateMemory({ store, input, actor: actorIn(ctx) }),
    description: "Update (or move with move_to) an existing memory." }),
  tool({ name: "delete_memory", scope: "write", output: deletedResponse, input: z.object({ ...storeShape, path: memoryPathSchema }).strict(), run: async ({ store, path }, ctx) => {
      await stores().deleteMemory({ store, memoryPath: path, actor: actorIn(ctx) });
      return { deleted: path };
    },
    description: "Delete a memory: it leaves the list and search and is kept in the store's trash (list_memory_trash, restore_memory) for DUALMIND_MEMORY_TRASH_DAYS." }),
  tool({ name: "list_memory_trash", scope: "read", output: memoryTrashReadOrListResponse, input: z.object({ ...storeShape, id: trashIdSchema.optional() }).strict(), run: async ({ store, id }) => (id ? stores().getTrashedMemory({ store, id }) : { retention_days: getConfig().memoryTrashDays, trash: await stores().listMemoryTrash({ store }) }),
    description: "Deleted memories still restorable, newest first (same as GET /stores/{store}/memories/trash); with id, one of them with its body." }),
  tool({ name: "restore_memory", scope: "write", output: memoryWithBody, input: restoreMemorySchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => stores().restoreMemory({ store, input, actor: actorIn(ctx) }),
    description: "Restore a deleted memory from the trash, byte for byte, at its old path or at `to` (same as POST /stores/{store}/memories/trash)." }),
];

const graphTools: ToolDef[] = [
  tool({ name: "think", scope: "write", output: thoughtCreatedResponse, input: thinkInputSchema.safeExtend(storeShape), run: async ({ store, ...input }, ctx) => wrappedWithProposal({ key: "thought", item: await graphBackend().think({ store, input, actor: actorIn(ctx) }) }),
    description: "Record a thought (optionally in a chain); it is embedded and scored for novelty." }),
  tool({ name: "remember", scope: "read", output: rememberResponse, input: rememberInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => countedRetrieval({ kind: "remember", agentId: agentOf(ctx), store, work: () => graphBackend().remember({ store, input }) }),
    description: "Recall thoughts and graph nodes for a query: semantic + episodic + procedural + one-hop relation scoring, with evidence. mode says what answered, fallback why vectors did not, reason why an answer is empty or weak; explain=true adds each stage (readiness, vector, lexical, expansion, fusion) with its candidates and time." }),
  tool({ name: "node_create", scope: "write", output: nodeCreatedResponse, input: createNodeInputSchema.safeExtend(storeShape), run: async ({ store, ...input }, ctx) => wrappedWithProposal({ key: "node", item: await graphBackend().createNode({ store, input, actor: actorIn(ctx) }) }),
    description: "Create a knowledge-graph node (entity)." }),
  tool({ name: "node_get", scope: "read", output: nodeDetailResponse, input: storeItemParams, run: ({ store, id }) => graphBackend().getNodeDetail({ store, id }),
    description: "A node with its frames, relations and neighbours." }),
  tool({ name: "node_list", scope: "read", output: nodeListResponse, input: listNodesQuerySchema.safeExtend(storeShape), run: ({ store, ...filter }) => graphBackend().listNodes({ store, filter }),
    description: "List or find nodes by name and entity type." }),
  tool({ name: "node_update", scope: "write", output: nodeResponse, input: withChanges(updateNodeInputSchema), run: async ({ store, id, changes }) => ({ node: await graphBackend().updateNode({ store, id, input: changes }) }),
    description: "Change a node's display name, scope, attributes or tags (fields under `changes`)." }),
  tool({ name: "node_delete", scope: "write", output: nodeDeletedResponse, input: storeItemParams, run: ({ store, id }, ctx) => graphBackend().deleteNode({ store, id, actor: actorIn(ctx) }),
    description: "Delete a node with its frames and relations (audited)." }),
  tool({ name: "relation_create", scope: "write", output: relationCreatedOrProposedResponse, input: createRelationInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => graphBackend().createOrMergeRelation({ store, input, actor: actorIn(ctx) }),
    description: "Create a relation between two nodes, or merge into the existing one of the same type." }),
  tool({ name: "relation_update", scope: "write", output: relationResponse, input: withChanges(updateRelationInputSchema), run: async ({ store, id, changes }) => ({ relation: await graphBackend().updateRelation({ store, id, input: changes }) }),
    description: "Change a relation's weight, confidence, direction, time range or attributes (fields under `changes`)." }),
  tool({ name: "relation_delete", scope: "write", output: graphDeletedResponse, input: storeItemParams, run: ({ store, id }, ctx) => graphBackend().deleteRelation({ store, id, actor: actorIn(ctx) }),
    description: "Delete a relation (audited)." }),
  tool({ name: "frame_create", scope: "write", output: frameCreatedResponse, input: createFrameInputSchema.safeExtend(storeShape), run: async ({ store, ...input }, ctx) => wrappedWithProposal({ key: "frame", item: await graphBackend().createFrame({ store, input, actor: actorIn(ctx) }) }),
    description: "Attach a semantic / episodic / procedural / custom frame to a node." }),
  tool({ name: "frame_update", scope: "write", output: frameResponse, input: withChanges(updateFrameInputSchema), run: async ({ store, id, changes }) => ({ frame: await graphBackend().updateFrame({ store, id, input: changes }) }),
    description: "Replace a frame's properties (under `changes`)." }),
  tool({ name: "frame_delete", scope: "write", output: graphDeletedResponse, input: storeItemParams, run: ({ store, id }, ctx) => graphBackend().deleteFrame({ store, id, actor: actorIn(ctx) }),
    description: "Delete a frame (audited)." }),
  tool({ name: "evidence_link", scope: "write", output: evidenceLinkResponse, input: linkEvidenceInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => graphBackend().linkEvidence({ store, input, actor: actorIn(ctx) }),
    description: "Link a thought as evidence for (or against) a frame or relation." }),
  tool({ name: "evidence_unlink", scope: "write", output: evidenceUnlinkedResponse, input: evidenceKeySchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => graphBackend().unlinkEvidence({ store, input, actor: actorIn(ctx) }),
    description: "Remove a thought's evidence link from a frame or relation (audited)." }),
];

const recallTools: ToolDef[] = [
  tool({ name: "recall", scope: "read", output: recallResponse, input: recallInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => countedRetrieval({ kind: "recall", agentId: agentOf(ctx), store, work: () => recallBackend().recall({ store, agentId: agentOf(ctx), input }) }),
    description: "Recall past traces and learnings similar to a query or a structured intent, with guidance (e.g. a past-failure warning). mode says what answered, fallback why vectors did not, reason why an answer is empty or weak; explain=true adds each stage (readiness, vector, lexical, ranking) with its candidates and time." }),
  tool({ name: "record_trace", scope: "write", output: traceRecordedResponse, input: traceInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => recallBackend().recordTrace({ store, agentId: agentOf(ctx), input }),
    description: "Record a reasoning trace (intent, shard, files, outcome, key issue, tags); sanitized and deduplicated by descriptor." }),
  tool({ name: "record_learning", scope: "write", output: learningCreatedResponse, input: learningInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => recallBackend().recordLearning({ store, agentId: agentOf(ctx), input }),
    description: "Record a learning (predicate, args, description, confidence) with a semantic handle; deduplicated." }),
];

/** Governed memory: any single item (memory, learning, trace, thought, node, relation, frame) by id, as the items routes. */
const itemTools: ToolDef[] = [
  tool({ name: "item_invalidate", scope: "write", output: itemDecisionResponse, input: itemParams.extend(itemDecisionSchema.shape).strict(), run: ({ store, kind, id, reason }, ctx) => decideItemIn({ store, kind, id, to: "retired", reason, who: { principal: ctx.principal } }),
    description: "Invalidate one item by kind and id, with a reason: it is retired (kept, with its history) and no longer answers search, recall, remember or lists; restorable. Recorded in the ledger and the audit log." }),
  tool({ name: "item_restore", scope: "write", output: itemDecisionResponse, input: itemParams.extend(itemDecisionSchema.shape).strict(), run: ({ store, kind, id, reason }, ctx) => decideItemIn({ store, kind, id, to: "active", reason, who: { principal: ctx.principal } }),
    description: "Restore a retired item by kind and id, with a reason: it answers again at once, unchanged." }),
  tool({ name: "item_history", scope: "read", output: itemHistoryResponse, input: itemParams, run: (params) => itemHistoryIn(params),
    description: "One item's state and each transition (from, to, when, who, why), oldest first." }),
];

/** Facts (lib/index/facts.ts): a store's unresolved contradictions, as GET /stores/{store}/contradictions. */
const factTools: ToolDef[] = [
  tool({ name: "contradictions", scope: "read", output: contradictionsResponse, input: contradictionsQuerySchema.safeExtend(storeShape), run: ({ store, limit }) => listContradictionsIn({ store, limit }),
    description: "A store's unresolved contradictions: facts of one subject and property stating different values for the same time, each pair once, newest first. Retiring either item (item_invalidate) resolves one." }),
];

/** Governed memory's write policy and review queue, as the policy and proposals routes. */
const reviewTools: ToolDef[] = [
  tool({ name: "write_policy_get", scope: "read", output: writePolicyResponse, input: z.object(storeShape).strict(), run: ({ store }) => writePolicyIn({ store }),
    description: "A store's write policy: per kind (memory, learning, thought, node, relation, frame) open or review, and the trusted actors whose writes bypass review." }),
  tool({ name: "write_policy_set", scope: "admin", output: writePolicySetResponse, input: writePolicyInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => setWritePolicyIn({ store, input, who: { principal: ctx.principal } }),
    description: "Change a store's write policy (admin): modes per kind, and the trusted actors (agent ids, token labels, user:<name>). Audited, recorded in the ledger (old → new)." }),
  tool({ name: "proposals_list", scope: "read", output: proposalListResponse, input: listProposalsQuerySchema.safeExtend(storeShape), run: ({ store, ...query }) => proposalsIn({ store, ...query }),
    description: "The review queue: writes waiting for review, newest first, with who proposed them, when, why (untrusted or flagged), their poisoning flags and an excerpt." }),
  tool({ name: "proposal_approve", scope: "write", output: proposalDecisionResponse, input: proposalParams.extend(approveProposalSchema.shape).strict(), run: ({ store, kind, id, reason, edit }, ctx) => decideProposalIn({ store, kind, id, to: "active", reason, edit, who: { principal: ctx.principal } }),
    description: "Approve a proposal (optionally `edit` first, as the kind's update): it answers search, recall and remember at once. Not your own proposal." }),
  tool({ name: "proposal_reject", scope: "write", output: proposalDecisionResponse, input: proposalParams.extend(rejectProposalSchema.shape).strict(), run: ({ store, kind, id, reason }, ctx) => decideProposalIn({ store, kind, id, to: "rejected", reason, who: { principal: ctx.principal } }),
    description: "Reject a proposal with a reason: kept with its history, answers nothing. Not your own proposal." }),
  tool({ name: "proposal_dialectic", scope: "write", output: proposalSessionResponse, input: proposalParams, run: (params, ctx) => openProposalDialecticIn({ ...params, principal: ctx.principal }),
    description: "Open a dialectic session on a proposal (you are its requestor); its topic names the item." }),
];

const ledgerTools: ToolDef[] = [
  tool({ name: "task_create", scope: "write", output: taskCreatedResponse, input: createTaskSchema, run: (input, ctx) => governance().createTask({ input, requestedBy: agentOf(ctx) }),
    description: "Record a task (intent + spec, optional assignees who may run and validate it) in the governance ledger; retrying with the same task_id returns the first one." }),
  tool({ name: "task_status", scope: "read", output: taskStatusResponse, input: z.object(taskIdShape).strict(), run: ({ task_id }, ctx) => governance().getTaskStatus({ taskId: task_id, caller: callerIn(ctx) }),
    description: "One of your tasks (requested by or assigned to you) with its runs, validations and the verdict with reasons." }),
  tool({ name: "record_run", scope: "write", output: runRecordedResponse, input: startRunSchema.safeExtend(taskIdShape), run: ({ task_id, ...input }, ctx) => governance().recordRunStart({ taskId: task_id, input, caller: callerIn(ctx) }),
    description: "Record a skill run of a task (started, or finished when output_hash and exit_code are given)." }),
  tool({ name: "finish_run", scope: "write", output: runFinishedResponse, input: finishRunSchema.safeExtend({ ...taskIdShape, run_id: clientIdSchema }), run: ({ task_id, run_id, ...input }, ctx) => governance().recordRunFinish({ taskId: task_id, runId: run_id, input, caller: callerIn(ctx) }),
    description: "Finish a started run with its output hash and exit code." }),
  tool({ name: "record_validation", scope: "write", output: validationRecordedResponse, input: recordValidationSchema.safeExtend(taskIdShape), run: ({ task_id, ...input }, ctx) => governance().recordValidation({ taskId: task_id, input, caller: callerIn(ctx) }),
    description: "Record a critic and/or runner validation of a task." }),
];

const dialecticTools: ToolDef[] = [
  tool({ name: "dialectic_request", scope: "write", output: sessionCreatedResponse, input: createSessionSchema, run: (input, ctx) => governance().createDialecticSession({ input, agentId: agentOf(ctx) }),
    description: "Open a dialectic review session (you are the paused agent; post the thesis next)." }),
  tool({ name: "dialectic_post", scope: "write", output: messagePostedResponse, input: postMessageSchema.safeExtend(sessionIdShape), run: ({ session_id, ...input }, ctx) => governance().postDialecticMessage({ sessionId: session_id, ...callerIn(ctx), input }),
    description: "Post the next message (thesis, antithesis or synthesis) to a session; only the expected agent may post." }),
  tool({ name: "dialectic_get", scope: "read", output: sessionView, input: z.object(sessionIdShape).strict(), run: ({ session_id }, ctx) => governance().getDialecticSessionForAgent({ sessionId: session_id, ...callerIn(ctx) }),
    description: "A session with its transcript and who is expected to post next." }),
];

const storeTools: ToolDef[] = [
  tool({ name: "list_stores", scope: "read", output: storeListResponse, input: z.object({}).strict(), run: async (_args, ctx) => ({ stores: await stores().listStores({ only: (store) => canUseStore({ principal: ctx.principal, store }) }) }),
    description: "The stores this token may use, with counts." }),
  tool({ name: "store_health", scope: "read", output: storeHealthResponse, input: storeParams, run: ({ store }, ctx) => storeHealthReportFor({ store, principal: ctx.principal }),
    description: "A store's health, the same report as GET /stores/{store}/health: its one live status (healthy, degraded, stalled, drifted, provider_down, parked, vectors_unavailable) with the reason and fixing action, backlog, drift, coverage, vector index, provider and worker state, re-embed progress, recall quality." }),
];

/** Admin tools over the audit log: like their REST routes, a store-limited admin names one of its stores. */
const activityTools: ToolDef[] = [
  tool({ name: "activity", scope: "admin", output: activityPageResponse, input: activityFilterSchema, run: (filter, ctx) => {
      assertStoreNamedWhenLimited({ principal: ctx.principal, store: filter.store });
      return listActivity({ filter });
    },
    description: "What agents and people did, from the audit log, newest first (GET /activity): filter by agent, actor, action (or a family ending in a dot, e.g. memory.), store, target and time (since/until); page with before = next_cursor. Each entry links to what it touched." }),
  tool({ name: "activity_summary", scope: "admin", output: activitySummaryResponse, input: activitySummarySchema, run: (filter, ctx) => {
      assertStoreNamedWhenLimited({ principal: ctx.principal, store: filter.store });
      return summarizeActivity({ filter });
    },
    description: "What one agent (or actor) did over a time range: writes, reviews, searches, recalls, remembers and failures, and audited actions per action (GET /activity/summary)." }),
];

/** Self-recall: how well a store finds its own content (POST and GET /stores/{store}/evaluate). */
const selfRecallTools: ToolDef[] = [
  tool({ name: "evaluate_store", scope: "admin", output: evaluateStartResponse, input: evaluateInputSchema.safeExtend(storeShape), run: async ({ store, ...input }, ctx) => ({ job: await startEvaluation({ store, actor: actorIn(ctx), input }) }),
    description: "Start a self-recall evaluation of a store (an admin job, POST /stores/{store}/evaluate): probes drawn from the store's own documents, memories, traces, learnings and thoughts are asked in each mode and scored hit@1/hit@10/MRR@10. target=shadow measures the model a held re-embed built, before the switch. Poll self_recall for the result." }),
  tool({ name: "self_recall", scope: "read", output: selfRecallResponse, input: storeParams, run: ({ store }) => getSelfRecall({ store }),
    description: "A store's self-recall (GET /stores/{store}/evaluate): the newest run per kind and mode, the trend with what changed between runs, and the last evaluation job." }),
];

/** Forgetting by policy, as the …/policy/forget routes: read the policy, set it (admin), run it (admin; dry by default). */
const forgetTools: ToolDef[] = [
  tool({ name: "forget_policy_get", scope: "read", output: forgetPolicyResponse, input: storeParams, run: ({ store }) => forgetPolicyIn({ store }),
    description: "A store's forgetting policy per kind (memory, learning, trace, thought): ttl_days (since written or last used), max_items (keep the newest N), unused_days (never recalled or rated), honour_expires_at (memories), protected_ids; items tagged 'pinned' are never forgotten." }),
  tool({ name: "forget_policy_set", scope: "admin", output: forgetPolicyResponse, input: forgetPolicyInputSchema.safeExtend(storeShape), run: ({ store, ...input }, ctx) => setForgetPolicyIn({ store, input, who: { principal: ctx.principal } }),
    description: "Set a store's forgetting policy for the kinds named under `policies` (null removes a kind's policy). Admin; audited and recorded in the ledger." }),
  tool({ name: "forget_run", scope: "admin", output: forgetRunResponse, input: forgetRunInputSchema.safeExtend(storeShape), run: ({ store, dry_run, limit }, ctx) => runForgettingIn({ store, dryRun: dry_run ?? true, limit, who: { principal: ctx.principal } }),
    description: "Run a store's forgetting policy: dry_run (default true) lists what would be retired and why; dry_run false retires them (restorable with item_restore), at most `limit` per call, answering how many remain. Each run is a ledger row." }),
];

export const MCP_TOOLS: readonly ToolDef[] = [...indexTools, ...recallTools, ...graphTools, ...itemTools, ...reviewTools, ...ledgerTools, ...dialecticTools, ...storeTools, ...activityTools, ...selfRecallTools, ...forgetTools, ...factTools];
