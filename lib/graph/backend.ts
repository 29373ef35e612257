import { byStore, perEngine, type Engine } from "../db/engine";
import type { AnyStoreHandle } from "../db/port";
import { refusingArchivedWrites } from "../db/store-lifecycle";
import { linkEvidence, listEvidenceByTarget, listEvidenceUsesByThoughtId, unlinkEvidence } from "./evidence";
import { createFrame, deleteFrame, getFrameById, updateFrame } from "./frames";
import { getNodeDetailById } from "./node-detail";
import { createNode, deleteNode, listNodesByFilter, updateNode } from "./nodes";
import { createOrMergeRelation, deleteRelation, getRelationById, updateRelation } from "./relations";
import { type ThinkInput, type Thought, deleteThought, getChainById, getThoughtById, listChainsByRecency, listThoughtsByFilter, recordThoughtFeedback, thinkThought } from "./thoughts";
import { deleteWorkingMemoryByKey, getWorkingMemoryByKey, listWorkingMemory, setWorkingMemory, sweepExpiredWorkingMemory } from "./working-memory";
import { contradictionsOfResult, rememberByQuery, type RememberInput, type RememberResponse, type RememberResult } from "./remember";
import { pgRemember } from "./engines/pg";
import { sqliteRemember } from "./engines/sqlite";
import { storeEngineOf } from "../stores/backend";
import { contradictionFlagsOf, factsOf, flaggingContradictions, type Contradiction } from "../index/facts";
import { proposing, reviewedChange } from "../index/proposals";
import { withFlags, type Flagged } from "../poison";

/**
 * Thoughts, chains, the knowledge graph and working memory behind one interface, on SQLite stores or PostgreSQL
 * (docs/ARCHITECTURE.md). Here, not in stores(), because graph sits above stores. An unknown store is a 404 on both;
 * `remember` opens core only when the request includes it, the token's right to read core checked with the request.
 */
/** A remember answer as shown: each result with the flags of its title (lib/poison.ts). */
export type FlaggedRememberResponse = Omit<RememberResponse, "results"> & { results: Flagged<RememberResult>[] };

export type GraphBackend = ReturnType<typeof graphOn>;

/** A remember result with its unresolved contradictions (of the thought, or of the relation the node was reached by) as flags. */
function withContradictionFlags<R extends Flagged<object>>({ item, contradictions }: { item: R; contradictions: Contradiction[] | undefined }): R {
  return contradictions ? { ...item, flags: [...item.flags, ...(contradictionFlagsOf({ contradictions }) as unknown as R["flags"])] } : item;
}

/** The graph backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const graphBackend: () => GraphBackend = perEngine(graphOn);

/** What a thought's create takes, through `proposing()`. */
type ThinkArgs = { input: ThinkInput & { supersedes?: undefined }; actor: string };

/**
 * The graph on one engine: the repositories take either engine's handle
 * (lib/db/port.ts), so only how a store opens and remember's reads
 * (full-text and vectors, lib/graph/engines/) differ.
 */
export function graphOn(engine: Engine) {
  const { open, openCore } = storeEngineOf(engine);
  const rememberEngine = engine.kind === "pg" ? pgRemember : sqliteRemember;
  const on = byStore(open);
  /** Writes an archived store refuses (409 store_archived), whichever surface asks. */
  const writes = {
    think: proposing({
      kind: "thought", facts: factsOf({ kind: "thought" }),
      open,
      createIn: ({ handle, input, actor }: ThinkArgs & { handle: AnyStoreHandle }): Thought | Promise<Thought> => thinkThought({ handle, input, actor }),
      idOf: (t) => t.id,
      actorOf: (a) => a.actor,
    }),
    deleteThought: reviewedChange({ kind: "thought", open, change: on(deleteThought), idOf: (a) => a.id }),
    recordThoughtFeedback: on(recordThoughtFeedback),
    createNode: proposing({ kind: "node", open, createIn: createNode, idOf: (n) => n.id, actorOf: (a) => a.actor, isNew: (n, startedAt) => n.created_at >= startedAt }),
    updateNode: reviewedChange({ kind: "node", open, change: on(updateNode), idOf: (a) => a.id, fieldsOf: (a) => a.input as Record<string, unknown> }),
    deleteNode: reviewedChange({ kind: "node", open, change: on(deleteNode), idOf: (a) => a.id }),
    createOrMergeRelation: proposing({
      kind: "relation", facts: factsOf({ kind: "relation" }),
      open,
      createIn: createOrMergeRelation,
      idOf: (r) => r.relation.id,
      actorOf: (a) => a.actor,
      isNew: (r) => !r.merged,
    }),
    updateRelation: reviewedChange({ kind: "relation", open, change: on(updateRelation), idOf: (a) => a.id, fieldsOf: (a) => a.input as Record<string, unknown> }),
    deleteRelation: reviewedChange({ kind: "relation", open, change: on(deleteRelation), idOf: (a) => a.id }),
    createFrame: proposing({
      kind: "frame", facts: factsOf({ kind: "frame" }),
      open,
      createIn: createFrame,
      idOf: (f) => f.id,
      actorOf: (a) => a.actor,
    }),
    updateFrame: reviewedChange({ kind: "frame", open, change: on(updateFrame), idOf: (a) => a.id, fieldsOf: (a) => a.input as Record<string, unknown> }),
    deleteFrame: reviewedChange({ kind: "frame", open, change: on(deleteFrame), idOf: (a) => a.id }),
    linkEvidence: on(linkEvidence),
    unlinkEvidence: on(unlinkEvidence),
    setWorkingMemory: on(setWorkingMemory),
    deleteWorkingMemory: on(deleteWorkingMemoryByKey),
  };
  const graph = {
    ...writes,
    listThoughts: on(listThoughtsByFilter),
    getThought: on(getThoughtById),
    listChains: on(listChainsByRecency),
    getChain: on(getChainById),
    listNodes: on(listNodesByFilter),
    getNodeDetail: on(getNodeDetailById),
    getRelation: on(getRelationById),
    getFrame: on(getFrameById),
    listEvidence: on(listEvidenceByTarget),
    /** What a thought is evidence for (the dashboard's thought page). */
    listEvidenceUses: on(listEvidenceUsesByThoughtId),
    listWorkingMemory: on(listWorkingMemory),
    getWorkingMemory: on(getWorkingMemoryByKey),
    /** Delete the store's expired working-memory keys (never returned anyway); how many went. */
    sweepWorkingMemory: on(sweepExpiredWorkingMemory),
    remember: async ({ store, input }: { store: string; input: RememberInput }): Promise<FlaggedRememberResponse> => {
      const handle = await open(store);
      const answer = await rememberByQuery({ engine: rememberEngine, handle, core: await openCore(handle, input.include_core === true), input });
      // Each result with the flags of the title it shows (lib/poison.ts).
      return { ...answer, results: answer.results.map((r) => withContradictionFlags({ item: withFlags({ item: r, fields: { title: r.title } }), contradictions: contradictionsOfResult.get(r) })) };
    },
  };
  // Facts (lib/index/facts.ts): a single thought, relation or frame read carries its unresolved contradictions in its flags.
  graph.getThought = flaggingContradictions({ kind: "thought", open, get: graph.getThought, idOf: (t) => t.id });
  graph.getRelation = flaggingContradictions({ kind: "relation", open, get: graph.getRelation, idOf: (r) => r.id });
  graph.getFrame = flaggingContradictions({ kind: "frame", open, get: graph.getFrame, idOf: (f) => f.id });
  return refusingArchivedWrites({ backend: graph, writes: Object.keys(writes) as (keyof typeof writes)[] });
}
