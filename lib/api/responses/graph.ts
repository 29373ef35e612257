/** Thoughts, chains, the knowledge graph, evidence, remember and working memory. */
import { retrievalExplain, retrievalFallback, retrievalReason } from "./documents";
import { z } from "zod";
import { createdOrExisting } from "../contract";
import { ENTITY_TYPES, EVIDENCE_STANCES, FRAME_COLUMNS, FRAMEWORKS } from "../../db/schema/graph";
import { EVIDENCE_TARGETS } from "../../graph/evidence";
import { rememberResultSchema } from "../../graph/remember";
import { count, deletedResponse, epochMs, exact, flags, freeForm } from "./common";

const unit = z.number().min(0).max(1);

export const thought = exact({
  id: z.string(),
  content: z.string(),
  framework: z.enum(FRAMEWORKS),
  chain_id: z.string().nullable(),
  thought_number: z.number().int().nullable(),
  total_thoughts: z.number().int().nullable(),
  timestamp: epochMs,
  importance: unit,
  relevance: unit,
  tags: z.array(z.string()),
  category: z.string().nullable(),
  novelty: z.number().nullable(),
  consistency: z.number().nullable(),
  utility: z.number().nullable(),
  feedback_count: count,
  created_by: z.string(),
  /** pending: queued for a vector; ready: embedded; missing: neither (e.g. parked after errors). */
  embedding: z.enum(["pending", "ready", "missing"]),
  flags,
});
export const thoughtResponse = exact({ thought });
/** `next_offset`: where the next page starts when rows remain (past `limit` or past DUALMIND_LIST_MAX_BYTES); null at the end. */
export const thoughtListResponse = exact({ thoughts: z.array(thought), total: count, next_offset: count.nullable() });

export const chain = exact({ id: z.string(), created_at: epochMs, updated_at: epochMs, thought_count: count });
export const chainListResponse = exact({ chains: z.array(chain), total: count });
export const chainResponse = exact({ chain: chain.extend({ thoughts: z.array(thought), next_offset: z.number().int().nullable() }) });

export const graphNode = exact({
  id: z.string(),
  name: z.string(),
  display_name: z.string(),
  entity_type: z.enum(ENTITY_TYPES),
  scope: z.string().nullable(),
  created_at: epochMs,
  updated_at: epochMs,
  created_by: z.string(),
  attributes: freeForm,
  tags: z.array(z.string()),
  auto_extracted: z.boolean(),
  flags,
});
export const nodeResponse = exact({ node: graphNode });
export const nodeListResponse = exact({ nodes: z.array(graphNode), total: count, next_offset: count.nullable() });
export const nodeDeletedResponse = exact({ deleted: z.string(), frames: count, relations: count });

export const graphFrame = exact({
  id: z.string(),
  node_id: z.string(),
  column: z.enum(FRAME_COLUMNS),
  properties: freeForm,
  created_at: epochMs,
  updated_at: epochMs,
  created_by: z.string(),
  flags,
});
export const frameResponse = exact({ frame: graphFrame });

export const graphRelation = exact({
  id: z.string(),
  from_id: z.string(),
  to_id: z.string(),
  relationship_type: z.string(),
  bidirectional: z.boolean(),
  weight: unit,
  confidence: unit,
  temporal_start: epochMs.nullable(),
  temporal_end: epochMs.nullable(),
  attributes: freeForm,
  created_at: epochMs,
  updated_at: epochMs,
  created_by: z.string(),
  flags,
});
export const relationResponse = exact({ relation: graphRelation });
/** 201 for a new relation; 200 with merged: true when it merged into the existing one of the same type. */
export const relationCreatedResponse = createdOrExisting(exact({ relation: graphRelation, merged: z.boolean() }));

const stance = z.enum(EVIDENCE_STANCES);
const evidenceWithExcerpt = z.array(exact({ thought_id: z.string(), stance, excerpt: z.string().nullable() }));
const neighbour = exact({ id: z.string(), display_name: z.string(), entity_type: z.enum(ENTITY_TYPES) });
const linkedRelation = graphRelation.extend({ other: neighbour, evidence: evidenceWithExcerpt, evidence_total: z.number().int() });
export const nodeDetailResponse = exact({
  node: graphNode,
  frames: z.array(graphFrame.extend({ evidence: evidenceWithExcerpt, evidence_total: z.number().int() })),
  outgoing: z.array(linkedRelation),
  incoming: z.array(linkedRelation),
  /** How many frames and relations each way the node has: the lists above hold at most 100 frames and 200 relations each way (heaviest first), each with its 20 oldest evidence links (`evidence_total` counts them all). */
  totals: exact({ frames: z.number().int(), outgoing: z.number().int(), incoming: z.number().int() }),
});

export const evidenceLink = exact({ target: z.enum(EVIDENCE_TARGETS), target_id: z.string(), thought_id: z.string(), stance, created_at: epochMs, created_by: z.string() });
/** 201 for a new link; 200 with created: false when the link existed (its stance is updated). */
export const evidenceLinkResponse = createdOrExisting(exact({ evidence: evidenceLink, created: z.boolean() }));
/** A page of one target's links, oldest first (`limit` 1–200, default 50; `offset`), with how many it has. */
export const evidenceListResponse = exact({ evidence: z.array(exact({ thought_id: z.string(), stance })), total: z.number().int(), has_more: z.boolean() });
export const evidenceUnlinkedResponse = exact({ deleted: z.literal(true) });

export const graphDeletedResponse = deletedResponse;

/** The request's weights, and `fact`: fact_match's weight in this answer (max(1, the best score on the other terms); not a setting). */
const weights = exact({ semantic: z.number(), episodic: z.number(), procedural: z.number(), relation: z.number(), conflict: z.number(), fact: z.number() });
export const rememberResponse = exact({
  query: z.string(),
  store: z.string(),
  include_core: z.boolean(),
  mode: z.enum(["vector+fts", "fts"]),
  fallback: retrievalFallback.nullable(),
  core_fallback: retrievalFallback.nullable(),
  reason: retrievalReason.nullable(),
  formula: z.string(),
  /** What each signal means, in words. */
  signals: exact({ semantic: z.string(), recency: z.string(), episodic: z.string(), procedure_match: z.string(), edge_weight: z.string(), inconsistency: z.string(), fact_match: z.string() }),
  weights,
  tau_hours: z.number(),
  min_edge_weight: z.number(),
  as_of: epochMs.nullable(),
  /** The fusion policy that made `semantic`: the model it is calibrated for and the cosine's weight. */
  fusion: exact({ key: z.string(), source: z.enum(["measured", "provider", "request", "lexical"]), w_vec: z.number(), detail: z.string() }),
  /** Each result (its fields explained where it is declared). */
  results: z.array(rememberResultSchema.extend({ flags })),
  /** explain=true: each stage's candidates and time. */
  explain: retrievalExplain.optional(),
});

export const workingMemoryEntry = exact({
  key: z.string(),
  /** Whatever JSON the agent stored. */
  value: z.unknown(),
  expires_at: epochMs.nullable(),
  updated_at: epochMs,
  updated_by: z.string(),
});
export const workingMemoryEntryResponse = exact({ entry: workingMemoryEntry });
/** `next_offset`: where the next page starts when keys remain (past `limit` or past DUALMIND_LIST_MAX_BYTES); null at the end. */
export const workingMemoryListResponse = exact({ entries: z.array(workingMemoryEntry), total: count, next_offset: count.nullable() });
