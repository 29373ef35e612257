import type { z } from "zod";
import { perEngine, type Engine } from "../db/engine";
import { refusingArchivedWrites } from "../db/store-lifecycle";
import { linkEvidence, listEvidenceByTarget, listEvidenceUsesByThoughtId, unlinkEvidence, type EvidenceLink, type EvidencePage, type EvidenceUse, type evidenceKeySchema, type linkEvidenceInputSchema, type listEvidenceQuerySchema } from "./evidence";
import { createFrame, deleteFrame, getFrameById, updateFrame, type createFrameInputSchema, type GraphFrame, type updateFrameInputSchema } from "./frames";
import { getNodeDetailById, type NodeDetail } from "./node-detail";
import { createNode, deleteNode, listNodesByFilter, updateNode, type createNodeInputSchema, type GraphNode, type listNodesQuerySchema, type updateNodeInputSchema } from "./nodes";
import { createOrMergeRelation, deleteRelation, getRelationById, updateRelation, type createRelationInputSchema, type GraphRelation, type updateRelationInputSchema } from "./relations";
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
import { deleteWorkingMemoryByKey, getWorkingMemoryByKey, listWorkingMemory, setWorkingMemory, sweepExpiredWorkingMemory, type setWorkingMemoryInputSchema, type WorkingMemoryEntry } from "./working-memory";
import { rememberByQuery, type RememberInput, type RememberResponse } from "./remember";
import { pgRemember } from "./engines/pg";
import { sqliteRemember } from "./engines/sqlite";
import { storeEngineOf } from "../stores/backend";

/**
 * Thoughts, chains, the knowledge graph and working memory behind one
 * interface, as stores() (lib/stores/backend.ts) is for documents, search
 * and memories, on SQLite stores or on PostgreSQL when DATABASE_URL is set.
 * It lives here, not in stores(), because graph sits above stores (tests/architecture.test.ts); routes and
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

/** Writes an archived store refuses (409 store_archived), whichever surface asks. */
const GRAPH_WRITES = [
  "think",
  "deleteThought",
  "recordThoughtFeedback",
  "createNode",
  "updateNode",
  "deleteNode",
  "createOrMergeRelation",
  "updateRelation",
  "deleteRelation",
  "createFrame",
  "updateFrame",
  "deleteFrame",
  "linkEvidence",
  "unlinkEvidence",
  "setWorkingMemory",
  "deleteWorkingMemory",
] as const;

/** The graph backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const graphBackend: () => GraphBackend = perEngine(graphOn);

/**
 * The graph on one engine: the repositories take either engine's handle
 * (lib/db/port.ts), so only how a store opens and remember's reads
 * (full-text and vectors, lib/graph/engines/) differ.
 */
export function graphOn(engine: Engine): GraphBackend {
  const { open: on, openCore } = storeEngineOf(engine);
  const rememberEngine = engine.kind === "pg" ? pgRemember : sqliteRemember;
  const graph: GraphBackend = {
    think: async ({ store, ...a }) => thinkThought({ handle: await on(store), ...a }),
    listThoughts: async ({ store, ...a }) => listThoughtsByFilter({ handle: await on(store), ...a }),
    getThought: async ({ store, ...a }) => getThoughtById({ handle: await on(store), ...a }),
    deleteThought: async ({ store, ...a }) => deleteThought({ handle: await on(store), ...a }),
    recordThoughtFeedback: async ({ store, ...a }) => recordThoughtFeedback({ handle: await on(store), ...a }),
    listChains: async ({ store, ...a }) => listChainsByRecency({ handle: await on(store), ...a }),
    getChain: async ({ store, ...a }) => getChainById({ handle: await on(store), ...a }),
    createNode: async ({ store, ...a }) => createNode({ handle: await on(store), ...a }),
    listNodes: async ({ store, ...a }) => listNodesByFilter({ handle: await on(store), ...a }),
    getNodeDetail: async ({ store, ...a }) => getNodeDetailById({ handle: await on(store), ...a }),
    updateNode: async ({ store, ...a }) => updateNode({ handle: await on(store), ...a }),
    deleteNode: async ({ store, ...a }) => deleteNode({ handle: await on(store), ...a }),
    createOrMergeRelation: async ({ store, ...a }) => createOrMergeRelation({ handle: await on(store), ...a }),
    getRelation: async ({ store, ...a }) => getRelationById({ handle: await on(store), ...a }),
    updateRelation: async ({ store, ...a }) => updateRelation({ handle: await on(store), ...a }),
    deleteRelation: async ({ store, ...a }) => deleteRelation({ handle: await on(store), ...a }),
    createFrame: async ({ store, ...a }) => createFrame({ handle: await on(store), ...a }),
    getFrame: async ({ store, ...a }) => getFrameById({ handle: await on(store), ...a }),
    updateFrame: async ({ store, ...a }) => updateFrame({ handle: await on(store), ...a }),
    deleteFrame: async ({ store, ...a }) => deleteFrame({ handle: await on(store), ...a }),
    linkEvidence: async ({ store, ...a }) => linkEvidence({ handle: await on(store), ...a }),
    unlinkEvidence: async ({ store, ...a }) => unlinkEvidence({ handle: await on(store), ...a }),
    listEvidence: async ({ store, ...a }) => listEvidenceByTarget({ handle: await on(store), ...a }),
    listEvidenceUses: async ({ store, ...a }) => listEvidenceUsesByThoughtId({ handle: await on(store), ...a }),
    listWorkingMemory: async ({ store }) => listWorkingMemory({ handle: await on(store) }),
    setWorkingMemory: async ({ store, ...a }) => setWorkingMemory({ handle: await on(store), ...a }),
    getWorkingMemory: async ({ store, ...a }) => getWorkingMemoryByKey({ handle: await on(store), ...a }),
    deleteWorkingMemory: async ({ store, ...a }) => deleteWorkingMemoryByKey({ handle: await on(store), ...a }),
    sweepWorkingMemory: async ({ store }) => sweepExpiredWorkingMemory({ handle: await on(store) }),
    remember: async ({ store, input }) => {
      const handle = await on(store);
      return rememberByQuery({ engine: rememberEngine, handle, core: await openCore(handle, input.include_core === true), input });
    },
  };
  return refusingArchivedWrites({ backend: graph, writes: GRAPH_WRITES });
}

