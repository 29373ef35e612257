import type { z } from "zod";
import { backendChooser, type PgHandle } from "../db/pg";
import { linkEvidence, listEvidenceByTarget, listEvidenceUsesByThoughtId, unlinkEvidence, type EvidenceLink, type EvidencePage, type EvidenceUse, type evidenceKeySchema, type linkEvidenceInputSchema, type listEvidenceQuerySchema } from "./evidence";
import { linkEvidencePg, listEvidenceByTargetPg, unlinkEvidencePg } from "./evidence-pg";
import { listEvidenceUsesByThoughtIdPg } from "./evidence-uses-pg";
import { createFrame, deleteFrame, getFrameById, updateFrame, type createFrameInputSchema, type GraphFrame, type updateFrameInputSchema } from "./frames";
import { createFramePg, deleteFramePg, getFrameByIdPg, updateFramePg } from "./frames-pg";
import { getNodeDetailById, type NodeDetail } from "./node-detail";
import { getNodeDetailByIdPg } from "./node-detail-pg";
import { createNode, deleteNode, listNodesByFilter, updateNode, type createNodeInputSchema, type GraphNode, type listNodesQuerySchema, type updateNodeInputSchema } from "./nodes";
import { createNodePg, deleteNodePg, listNodesByFilterPg, updateNodePg } from "./nodes-pg";
import { createOrMergeRelation, deleteRelation, getRelationById, updateRelation, type createRelationInputSchema, type GraphRelation, type updateRelationInputSchema } from "./relations";
import { createOrMergeRelationPg, deleteRelationPg, getRelationByIdPg, updateRelationPg } from "./relations-pg";
import {
  deleteThought,
  getChainById,
  getThoughtById,
  listChainsByRecency,
  listThoughtsByFilter,
  recordThoughtFeedback,
  thinkThought,
  type Chain,
  type feedbackInputSchema,
  type listThoughtsQuerySchema,
  type ThinkInput,
  type Thought,
} from "./thoughts";
import { deleteThoughtPg, getChainByIdPg, getThoughtByIdPg, listChainsByRecencyPg, listThoughtsByFilterPg, recordThoughtFeedbackPg, thinkThoughtPg } from "./thoughts-pg";
import { deleteWorkingMemoryByKey, getWorkingMemoryByKey, listWorkingMemory, setWorkingMemory, sweepExpiredWorkingMemory, type setWorkingMemoryInputSchema, type WorkingMemoryEntry } from "./working-memory";
import { deleteWorkingMemoryByKeyPg, getWorkingMemoryByKeyPg, listWorkingMemoryPg, setWorkingMemoryPg, sweepExpiredWorkingMemoryPg } from "./working-memory-pg";
import { withStoreTx } from "../db/pg-store";
import { rememberByQuery, type RememberInput, type RememberResponse } from "./remember";
import { rememberByQueryPg } from "./remember-pg";
import { openCoreFor, openStore } from "../stores/stores";
import { openCoreForPg, openStorePg } from "../stores/stores-pg";

/**
 * Thoughts, chains, the knowledge graph and working memory behind one
 * interface, as stores() (lib/stores/backend.ts) is for documents, search
 * and memories: the SQLite functions unchanged, or their PostgreSQL twins
 * (./*-pg.ts) when DATABASE_URL is set. It lives here, not in stores(),
 * because graph sits above stores (tests/architecture.test.ts); routes and
 * MCP tools call graphBackend() the way they call stores(), and an unknown
 * store is a 404 on both. `remember` opens core beside the store only when
 * the request includes it; the token's right to read core was checked with
 * the request (the route wrapper and runTool check every store it refers to).
 */

type StoreArg = { store: string };
type Actor = { actor: string };
type Id = { id: string };
type Deleted = { deleted: string };

export type GraphBackend = {
  think: (a: StoreArg & Actor & { input: ThinkInput }) => Promise<Thought>;
  listThoughts: (a: StoreArg & { filter: z.input<typeof listThoughtsQuerySchema> }) => Promise<{ thoughts: Thought[]; total: number }>;
  getThought: (a: StoreArg & Id) => Promise<Thought>;
  deleteThought: (a: StoreArg & Id & Actor) => Promise<Deleted>;
  recordThoughtFeedback: (a: StoreArg & Id & { input: z.input<typeof feedbackInputSchema> }) => Promise<Thought>;
  listChains: (a: StoreArg & { limit: number; offset: number }) => Promise<{ chains: Chain[]; total: number }>;
  getChain: (a: StoreArg & Id) => Promise<Chain & { thoughts: Thought[] }>;
  createNode: (a: StoreArg & Actor & { input: z.input<typeof createNodeInputSchema> }) => Promise<GraphNode>;
  listNodes: (a: StoreArg & { filter: z.input<typeof listNodesQuerySchema> }) => Promise<{ nodes: GraphNode[]; total: number }>;
  getNodeDetail: (a: StoreArg & Id) => Promise<NodeDetail>;
  updateNode: (a: StoreArg & Id & { input: z.input<typeof updateNodeInputSchema> }) => Promise<GraphNode>;
  deleteNode: (a: StoreArg & Id & Actor) => Promise<Deleted & { frames: number; relations: number }>;
  createOrMergeRelation: (a: StoreArg & Actor & { input: z.input<typeof createRelationInputSchema> }) => Promise<{ relation: GraphRelation; merged: boolean }>;
  getRelation: (a: StoreArg & Id) => Promise<GraphRelation>;
  updateRelation: (a: StoreArg & Id & { input: z.input<typeof updateRelationInputSchema> }) => Promise<GraphRelation>;
  deleteRelation: (a: StoreArg & Id & Actor) => Promise<Deleted>;
  createFrame: (a: StoreArg & Actor & { input: z.input<typeof createFrameInputSchema> }) => Promise<GraphFrame>;
  getFrame: (a: StoreArg & Id) => Promise<GraphFrame>;
  updateFrame: (a: StoreArg & Id & { input: z.input<typeof updateFrameInputSchema> }) => Promise<GraphFrame>;
  deleteFrame: (a: StoreArg & Id & Actor) => Promise<Deleted>;
  linkEvidence: (a: StoreArg & Actor & { input: z.input<typeof linkEvidenceInputSchema> }) => Promise<{ evidence: EvidenceLink; created: boolean }>;
  unlinkEvidence: (a: StoreArg & Actor & { input: z.input<typeof evidenceKeySchema> }) => Promise<{ deleted: true }>;
  listEvidence: (a: StoreArg & { query: z.input<typeof listEvidenceQuerySchema> }) => Promise<EvidencePage>;
  /** What a thought is evidence for (the dashboard's thought page). */
  listEvidenceUses: (a: StoreArg & { thoughtId: string }) => Promise<EvidenceUse[]>;
  listWorkingMemory: (a: StoreArg) => Promise<WorkingMemoryEntry[]>;
  setWorkingMemory: (a: StoreArg & Actor & { input: z.input<typeof setWorkingMemoryInputSchema> }) => Promise<WorkingMemoryEntry>;
  getWorkingMemory: (a: StoreArg & { key: string }) => Promise<WorkingMemoryEntry>;
  deleteWorkingMemory: (a: StoreArg & { key: string }) => Promise<Deleted>;
  /** Delete the store's expired working-memory keys (never returned anyway); how many went. */
  sweepWorkingMemory: (a: StoreArg) => Promise<number>;
  remember: (a: StoreArg & { input: RememberInput }) => Promise<RememberResponse>;
};

/** The SQLite functions, unchanged; wrapped, a throw becomes a rejection like on PostgreSQL. */
export const sqliteGraph: GraphBackend = {
  think: async ({ store, ...a }) => thinkThought({ handle: openStore({ store }), ...a }),
  listThoughts: ({ store, ...a }) => listThoughtsByFilter({ handle: openStore({ store }), ...a }),
  getThought: ({ store, ...a }) => getThoughtById({ handle: openStore({ store }), ...a }),
  deleteThought: async ({ store, ...a }) => deleteThought({ handle: openStore({ store }), ...a }),
  recordThoughtFeedback: async ({ store, ...a }) => recordThoughtFeedback({ handle: openStore({ store }), ...a }),
  listChains: async ({ store, ...a }) => listChainsByRecency({ handle: openStore({ store }), ...a }),
  getChain: ({ store, ...a }) => getChainById({ handle: openStore({ store }), ...a }),
  createNode: async ({ store, ...a }) => createNode({ handle: openStore({ store }), ...a }),
  listNodes: async ({ store, ...a }) => listNodesByFilter({ handle: openStore({ store }), ...a }),
  getNodeDetail: async ({ store, ...a }) => getNodeDetailById({ handle: openStore({ store }), ...a }),
  updateNode: async ({ store, ...a }) => updateNode({ handle: openStore({ store }), ...a }),
  deleteNode: async ({ store, ...a }) => deleteNode({ handle: openStore({ store }), ...a }),
  createOrMergeRelation: async ({ store, ...a }) => createOrMergeRelation({ handle: openStore({ store }), ...a }),
  getRelation: async ({ store, ...a }) => getRelationById({ handle: openStore({ store }), ...a }),
  updateRelation: async ({ store, ...a }) => updateRelation({ handle: openStore({ store }), ...a }),
  deleteRelation: async ({ store, ...a }) => deleteRelation({ handle: openStore({ store }), ...a }),
  createFrame: async ({ store, ...a }) => createFrame({ handle: openStore({ store }), ...a }),
  getFrame: async ({ store, ...a }) => getFrameById({ handle: openStore({ store }), ...a }),
  updateFrame: async ({ store, ...a }) => updateFrame({ handle: openStore({ store }), ...a }),
  deleteFrame: async ({ store, ...a }) => deleteFrame({ handle: openStore({ store }), ...a }),
  linkEvidence: async ({ store, ...a }) => linkEvidence({ handle: openStore({ store }), ...a }),
  unlinkEvidence: async ({ store, ...a }) => unlinkEvidence({ handle: openStore({ store }), ...a }),
  listEvidence: async ({ store, ...a }) => listEvidenceByTarget({ handle: openStore({ store }), ...a }),
  listEvidenceUses: async ({ store, ...a }) => listEvidenceUsesByThoughtId({ handle: openStore({ store }), ...a }),
  listWorkingMemory: async ({ store }) => listWorkingMemory({ handle: openStore({ store }) }),
  setWorkingMemory: async ({ store, ...a }) => setWorkingMemory({ handle: openStore({ store }), ...a }),
  getWorkingMemory: async ({ store, ...a }) => getWorkingMemoryByKey({ handle: openStore({ store }), ...a }),
  deleteWorkingMemory: async ({ store, ...a }) => deleteWorkingMemoryByKey({ handle: openStore({ store }), ...a }),
  sweepWorkingMemory: async ({ store }) => sweepExpiredWorkingMemory({ handle: openStore({ store }) }),
  remember: async ({ store, input }) => {
    const handle = openStore({ store });
    return rememberByQuery({ handle, core: openCoreFor({ handle, includeCore: input.include_core === true }), input });
  },
};

/** The PostgreSQL twins: every method awaits the process's pool and opens the store there (404 when unknown), as pgStores() does. */
export function pgGraph(pgHandle: Promise<PgHandle> | PgHandle): GraphBackend {
  const open = async (store: string) => openStorePg({ pg: await pgHandle, store });
  return {
    think: async ({ store, ...a }) => thinkThoughtPg({ handle: await open(store), ...a }),
    listThoughts: async ({ store, ...a }) => listThoughtsByFilterPg({ handle: await open(store), ...a }),
    getThought: async ({ store, ...a }) => getThoughtByIdPg({ handle: await open(store), ...a }),
    deleteThought: async ({ store, ...a }) => deleteThoughtPg({ handle: await open(store), ...a }),
    recordThoughtFeedback: async ({ store, ...a }) => recordThoughtFeedbackPg({ handle: await open(store), ...a }),
    listChains: async ({ store, ...a }) => listChainsByRecencyPg({ handle: await open(store), ...a }),
    getChain: async ({ store, ...a }) => getChainByIdPg({ handle: await open(store), ...a }),
    createNode: async ({ store, ...a }) => createNodePg({ handle: await open(store), ...a }),
    listNodes: async ({ store, ...a }) => listNodesByFilterPg({ handle: await open(store), ...a }),
    getNodeDetail: async ({ store, ...a }) => getNodeDetailByIdPg({ handle: await open(store), ...a }),
    updateNode: async ({ store, ...a }) => updateNodePg({ handle: await open(store), ...a }),
    deleteNode: async ({ store, ...a }) => deleteNodePg({ handle: await open(store), ...a }),
    createOrMergeRelation: async ({ store, ...a }) => createOrMergeRelationPg({ handle: await open(store), ...a }),
    getRelation: async ({ store, ...a }) => getRelationByIdPg({ handle: await open(store), ...a }),
    updateRelation: async ({ store, ...a }) => updateRelationPg({ handle: await open(store), ...a }),
    deleteRelation: async ({ store, ...a }) => deleteRelationPg({ handle: await open(store), ...a }),
    createFrame: async ({ store, ...a }) => createFramePg({ handle: await open(store), ...a }),
    getFrame: async ({ store, ...a }) => getFrameByIdPg({ handle: await open(store), ...a }),
    updateFrame: async ({ store, ...a }) => updateFramePg({ handle: await open(store), ...a }),
    deleteFrame: async ({ store, ...a }) => deleteFramePg({ handle: await open(store), ...a }),
    linkEvidence: async ({ store, ...a }) => linkEvidencePg({ handle: await open(store), ...a }),
    unlinkEvidence: async ({ store, ...a }) => unlinkEvidencePg({ handle: await open(store), ...a }),
    listEvidence: async ({ store, ...a }) => listEvidenceByTargetPg({ handle: await open(store), ...a }),
    listEvidenceUses: async ({ store, ...a }) => listEvidenceUsesByThoughtIdPg({ handle: await open(store), ...a }),
    listWorkingMemory: async ({ store }) => listWorkingMemoryPg({ handle: await open(store) }),
    setWorkingMemory: async ({ store, ...a }) => setWorkingMemoryPg({ handle: await open(store), ...a }),
    getWorkingMemory: async ({ store, ...a }) => getWorkingMemoryByKeyPg({ handle: await open(store), ...a }),
    deleteWorkingMemory: async ({ store, ...a }) => deleteWorkingMemoryByKeyPg({ handle: await open(store), ...a }),
    sweepWorkingMemory: async ({ store }) => withStoreTx({ handle: await open(store) }, (tx) => sweepExpiredWorkingMemoryPg(tx)),
    remember: async ({ store, input }) => {
      const pg = await pgHandle;
      const handle = await openStorePg({ pg, store });
      return rememberByQueryPg({ handle, core: await openCoreForPg({ pg, handle, includeCore: input.include_core === true }), input });
    },
  };
}

/** The graph backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const graphBackend: () => GraphBackend = backendChooser(sqliteGraph, pgGraph);
