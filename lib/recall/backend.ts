import type { z } from "zod";
import { perEngine, type Engine } from "../db/engine";
import { refusingArchivedWrites } from "../db/store-lifecycle";
import { storeEngineOf } from "../stores/backend";
import type { LearningInput, TraceInput } from "./descriptors";
import { getRecallEventById, getRecallMetrics, listRatingQueue, listRecallsReturning, listRecentRecallEvents, rateRecallHit, type RatingQueueItem, type rateRecallHitSchema, type RecallEvent, type RecallEventHit, type RecallMetricsBucket } from "./events";
import { getRecallScoreDistribution, type RecallScoreDistribution } from "./quality";
import { getLearningById, listLearnings, recordLearning, type Learning, type listLearningsQuerySchema, type RecordLearningResult } from "./learnings";
import { getReflectionOverview, type ReflectionOverview } from "./overview";
import { recallReflections, type RecallInput, type RecallResult } from "./recall";
import { pgRecall } from "./engines/pg";
import { sqliteRecall } from "./engines/sqlite";
import { updateReflectionSettings, type ReflectionSettings, type reflectionSettingsUpdateSchema } from "./settings";
import { getTraceById, listTraces, recordTrace, runTraceRetention, type listTracesQuerySchema, type RecordTraceResult, type Trace } from "./traces";

/**
 * Reflection recall — traces and learnings (sanitized, deduplicated, queued
 * for a vector), recall, settings and overview — behind one interface, as
 * stores() (lib/stores/backend.ts) is for documents, search and memories and
 * graphBackend() for the graph, on SQLite stores or on PostgreSQL when
 * DATABASE_URL is set. It lives here, not
 * in stores(), because recall sits above stores (tests/architecture.test.ts).
 * An unknown store is a 404 on both.
 */

type StoreArg = { store: string };

export type RecallBackend = {
  recordTrace: (a: StoreArg & { agentId: string; input: TraceInput }) => Promise<RecordTraceResult>;
  listTraces: (a: StoreArg & { filter: z.input<typeof listTracesQuerySchema> }) => Promise<{ traces: Trace[]; total: number }>;
  getTrace: (a: StoreArg & { id: number }) => Promise<Trace>;
  recordLearning: (a: StoreArg & { agentId: string; input: LearningInput }) => Promise<RecordLearningResult>;
  listLearnings: (a: StoreArg & { filter: z.input<typeof listLearningsQuerySchema> }) => Promise<{ learnings: Learning[]; total: number }>;
  getLearning: (a: StoreArg & { id: number }) => Promise<Learning>;
  recall: (a: StoreArg & { agentId: string; input: RecallInput }) => Promise<RecallResult>;
  getReflectionOverview: (a: StoreArg) => Promise<ReflectionOverview>;
  updateReflectionSettings: (a: StoreArg & { input: z.input<typeof reflectionSettingsUpdateSchema>; actor: string }) => Promise<ReflectionSettings>;
  /** The recall log, as the dashboard reads and rates it. */
  listRecentRecalls: (a: StoreArg & { limit: number }) => Promise<RecallEvent[]>;
  getRecall: (a: StoreArg & { id: number }) => Promise<RecallEvent>;
  listRecallsReturning: (a: StoreArg & { artifact: "trace" | "learning"; refId: number }) => Promise<RecallEvent[]>;
  listRatingQueue: (a: StoreArg & { limit: number }) => Promise<RatingQueueItem[]>;
  rateRecallHit: (a: StoreArg & { input: z.input<typeof rateRecallHitSchema>; actor: string }) => Promise<RecallEventHit>;
  getScoreDistribution: (a: StoreArg) => Promise<RecallScoreDistribution>;
  /** Recall hit rate, precision and latency per time bucket since `since` (buckets without recalls are left out). */
  getRecallMetrics: (a: StoreArg & { bucketMs: number; since: number }) => Promise<RecallMetricsBucket[]>;
  /** Apply the store's trace retention (TTL, then the cap) now. */
  runTraceRetention: (a: StoreArg) => Promise<{ deleted: number }>;
};

/** Writes an archived store refuses (409 store_archived), whichever surface asks. */
const RECALL_WRITES = ["recordTrace", "recordLearning", "updateReflectionSettings", "rateRecallHit"] as const;

/**
 * Recall on one engine: the repositories take either engine's handle
 * (lib/db/port.ts), so only how a store opens and recall's full-text and
 * vector legs (lib/recall/engines/) differ, picked here. Every method
 * is async, so a SQLite throw becomes a rejection as on PostgreSQL.
 */
export function recallOn(engine: Engine): RecallBackend {
  const { open: on } = storeEngineOf(engine);
  const recallEngine = engine.kind === "pg" ? pgRecall : sqliteRecall;
  const recall: RecallBackend = {
    recordTrace: async ({ store, ...a }) => recordTrace({ handle: await on(store), ...a }),
    listTraces: async ({ store, ...a }) => listTraces({ handle: await on(store), ...a }),
    getTrace: async ({ store, ...a }) => getTraceById({ handle: await on(store), ...a }),
    recordLearning: async ({ store, ...a }) => recordLearning({ handle: await on(store), ...a }),
    listLearnings: async ({ store, ...a }) => listLearnings({ handle: await on(store), ...a }),
    getLearning: async ({ store, ...a }) => getLearningById({ handle: await on(store), ...a }),
    recall: async ({ store, ...a }) => recallReflections({ engine: recallEngine, handle: await on(store), ...a }),
    getReflectionOverview: async ({ store }) => getReflectionOverview({ handle: await on(store) }),
    updateReflectionSettings: async ({ store, ...a }) => updateReflectionSettings({ handle: await on(store), ...a }),
    listRecentRecalls: async ({ store, ...a }) => listRecentRecallEvents({ handle: await on(store), ...a }),
    getRecall: async ({ store, ...a }) => getRecallEventById({ handle: await on(store), ...a }),
    listRecallsReturning: async ({ store, ...a }) => listRecallsReturning({ handle: await on(store), ...a }),
    listRatingQueue: async ({ store, ...a }) => listRatingQueue({ handle: await on(store), ...a }),
    rateRecallHit: async ({ store, ...a }) => rateRecallHit({ handle: await on(store), ...a }),
    getScoreDistribution: async ({ store }) => getRecallScoreDistribution({ handle: await on(store) }),
    getRecallMetrics: async ({ store, ...a }) => getRecallMetrics({ handle: await on(store), ...a }),
    runTraceRetention: async ({ store }) => runTraceRetention({ handle: await on(store) }),
  };
  return refusingArchivedWrites({ backend: recall, writes: RECALL_WRITES });
}

/** The recall backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const recallBackend: () => RecallBackend = perEngine(recallOn);
