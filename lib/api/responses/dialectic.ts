/** Dialectic review sessions. */
import { z } from "zod";
import { createdOrExisting } from "../contract";
import { MESSAGE_TYPES, PHASES, STATUSES } from "../../governance/dialectic";
import { dialecticSnapshotSchema } from "../../governance/dialectic-export";
import { count, epochMs, exact } from "./common";

export const dialecticMessage = exact({
  id: z.string(),
  session_id: z.string(),
  /** 1-based position in the transcript. */
  seq: z.number().int().min(1),
  agent_id: z.string(),
  message_type: z.enum(MESSAGE_TYPES),
  timestamp: epochMs,
  reasoning: z.string(),
  root_cause: z.string().nullable(),
  proposed_conditions: z.array(z.string()).nullable(),
  observed_metrics: z.record(z.string(), z.unknown()).nullable(),
  concerns: z.array(z.string()).nullable(),
  agrees: z.boolean().nullable(),
  /** Hash chain over the transcript: each message signs the one before. */
  signature: z.string(),
});

export const dialecticSession = exact({
  /** The id the paused agent chose; ids are namespaced per agent. */
  session_id: z.string(),
  /** The session's unambiguous address (`agent~session_id`; the id itself for sessions from before ids were namespaced): what an admin or reviewer names where the id alone names several sessions. */
  key: z.string(),
  paused_agent_id: z.string(),
  reviewer_agent_id: z.string().nullable(),
  phase: z.enum(PHASES),
  status: z.enum(STATUSES),
  created_at: epochMs,
  updated_at: epochMs,
  topic: z.string(),
  session_type: z.string(),
  failure_reason: z.string().nullable(),
  max_rounds: z.number().int(),
  idle_timeout_ms: z.number().int(),
  resolution: exact({ conditions: z.array(z.string()), agreed_by: z.array(z.string()), message_id: z.string(), seq: z.number().int() }).nullable(),
  message_count: count,
  synthesis_rounds: count,
  /** Who may post next, and what. */
  expected: exact({ phase: z.enum(PHASES), message_type: z.enum(MESSAGE_TYPES).nullable(), agent_ids: z.array(z.string()), note: z.string() }),
});
/** A session, with its transcript where asked for (detail always; lists with `transcript=true`). */
export const sessionView = dialecticSession.extend({ messages: z.array(dialecticMessage).optional(), transcript_omitted: z.literal(true).optional() });

/** 201 for a new session, 200 when a retry with the same session_id found it. */
export const sessionCreatedResponse = createdOrExisting(exact({ session: dialecticSession, created: z.boolean() }));
export const sessionResponse = exact({ session: dialecticSession });
/** `next_offset`: where the next page starts when rows remain (past `limit` or past DUALMIND_LIST_MAX_BYTES); null at the end. */
export const sessionListResponse = exact({ sessions: z.array(sessionView), total: count, next_offset: count.nullable() });
export const messagePostedResponse = createdOrExisting(exact({ message: dialecticMessage, session: dialecticSession, created: z.boolean() }));
export const signatureCheckResponse = z.union([
  exact({ ok: z.literal(true), messages: count }),
  exact({ ok: z.literal(false), messages: count, broken_at_seq: z.number().int(), reason: z.string() }),
]);
export const sweepResponse = exact({ failed: z.array(z.string()) });
export const restoreResponse = exact({ restored: count, unchanged: count, messages: count });

const routeLatency = exact({
  route: z.string(),
  count,
  mean_ms: z.number(),
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
  p99_ms: z.number().nullable(),
  /** Keys are HTTP statuses. */
  by_status: z.record(z.string(), count),
});
export const dialecticMetricsResponse = exact({
  active_sessions: count,
  failed_per_hour: z.array(exact({ hour_start: epochMs, failed: count })),
  messages_last_hour: count,
  messages_per_minute_last_hour: z.number(),
  latency: z.array(routeLatency),
});

/**
 * The snapshot is a file format (`dualmind.dialectic-sessions.v1`), the
 * same document `dualmind dialectic export` writes and the dashboard
 * downloads, and what restore reads back: the database rows verbatim, so its
 * keys are the rows' own (camelCase) and it is the one exception to the
 * snake_case rule.
 */
export const dialecticSnapshotResponse = dialecticSnapshotSchema;
