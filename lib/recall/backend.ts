import type { z } from "zod";
import { backendChooser, type PgHandle } from "../db/pg";
import { withStoreTx } from "../db/pg-store";
import { openStore } from "../stores/stores";
import { openStorePg } from "../stores/stores-pg";
import type { LearningInput, TraceInput } from "./descriptors";
import { getRecallEventById, getRecallMetrics, listRatingQueue, listRecallsReturning, listRecentRecallEvents, rateRecallHit, type RatingQueueItem, type rateRecallHitSchema, type RecallEvent, type RecallEventHit, type RecallMetricsBucket } from "./events";
import { getRecallEventByIdPg, getRecallMetricsPg, listRatingQueuePg, listRecallsReturningPg, listRecentRecallEventsPg, rateRecallHitPg } from "./events-pg";
import { getRecallScoreDistribution, type RecallScoreDistribution } from "./quality";
import { getRecallScoreDistributionPg } from "./quality-pg";
import { getLearningById, listLearnings, recordLearning, type Learning, type listLearningsQuerySchema, type RecordLearningResult } from "./learnings";
import { getLearningByIdPg, listLearningsPg, recordLearningPg } from "./learnings-pg";
import { getReflectionOverview, type ReflectionOverview } from "./overview";
import { getReflectionOverviewPg } from "./overview-pg";
import { recallReflections, type RecallInput, type RecallResult } from "./recall";
import { recallReflectionsPg } from "./recall-pg";
import { updateReflectionSettings, type ReflectionSettings, type reflectionSettingsUpdateSchema } from "./settings";
import { updateReflectionSettingsPg } from "./settings-pg";
import { getTraceById, listTraces, recordTrace, runTraceRetention, type listTracesQuerySchema, type RecordTraceResult, type Trace } from "./traces";
import { getTraceByIdPg, listTracesPg, recordTracePg, runTraceRetentionPg } from "./traces-pg";

/**
 * Reflection recall — traces and learnings (sanitized, deduplicated, queued
 * for a vector), recall, settings and overview — behind one interface, as
 * stores() (lib/stores/backend.ts) is for documents, search and memories and
 * graphBackend() for the graph: the SQLite functions unchanged, or their
 * PostgreSQL twins (./*-pg.ts) when DATABASE_URL is set. It lives here, not
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

/** The SQLite functions, unchanged; wrapped, a throw becomes a rejection like on PostgreSQL. */
export const sqliteRecall: RecallBackend = {
  recordTrace: async ({ store, ...a }) => recordTrace({ handle: openStore({ store }), ...a }),
  listTraces: async ({ store, ...a }) => listTraces({ handle: openStore({ store }), ...a }),
  getTrace: async ({ store, ...a }) => getTraceById({ handle: openStore({ store }), ...a }),
  recordLearning: async ({ store, ...a }) => recordLearning({ handle: openStore({ store }), ...a }),
  listLearnings: async ({ store, ...a }) => listLearnings({ handle: openStore({ store }), ...a }),
  getLearning: async ({ store, ...a }) => getLearningById({ handle: openStore({ store }), ...a }),
  recall: async ({ store, ...a }) => recallReflections({ handle: openStore({ store }), ...a }),
  getReflectionOverview: async ({ store }) => getReflectionOverview({ handle: openStore({ store }) }),
  updateReflectionSettings: async ({ store, ...a }) => updateReflectionSettings({ handle: openStore({ store }), ...a }),
  listRecentRecalls: async ({ store, ...a }) => listRecentRecallEvents({ handle: openStore({ store }), ...a }),
  getRecall: async ({ store, ...a }) => getRecallEventById({ handle: openStore({ store }), ...a }),
  listRecallsReturning: async ({ store, ...a }) => listRecallsReturning({ handle: openStore({ store }), ...a }),
  listRatingQueue: async ({ store, ...a }) => listRatingQueue({ handle: openStore({ store }), ...a }),
  rateRecallHit: async ({ store, ...a }) => rateRecallHit({ handle: openStore({ store }), ...a }),
  getScoreDistribution: async ({ store }) => getRecallScoreDistribution({ handle: openStore({ store }) }),
  getRecallMetrics: async ({ store, ...a }) => getRecallMetrics({ handle: openStore({ store }), ...a }),
  runTraceRetention: async ({ store }) => runTraceRetention({ handle: openStore({ store }) }),
};

/** The PostgreSQL twins: every method awaits the process's pool and opens the store there (404 when unknown). */
export function pgRecall(pgHandle: Promise<PgHandle> | PgHandle): RecallBackend {
  const open = async (store: string) => openStorePg({ pg: await pgHandle, store });
  return {
    recordTrace: async ({ store, ...a }) => recordTracePg({ handle: await open(store), ...a }),
    listTraces: async ({ store, ...a }) => listTracesPg({ handle: await open(store), ...a }),
    getTrace: async ({ store, ...a }) => getTraceByIdPg({ handle: await open(store), ...a }),
    recordLearning: async ({ store, ...a }) => recordLearningPg({ handle: await open(store), ...a }),
    listLearnings: async ({ store, ...a }) => listLearningsPg({ handle: await open(store), ...a }),
    getLearning: async ({ store, ...a }) => getLearningByIdPg({ handle: await open(store), ...a }),
    recall: async ({ store, ...a }) => recallReflectionsPg({ handle: await open(store), ...a }),
    getReflectionOverview: async ({ store }) => getReflectionOverviewPg({ handle: await open(store) }),
    updateReflectionSettings: async ({ store, ...a }) => updateReflectionSettingsPg({ handle: await open(store), ...a }),
    listRecentRecalls: async ({ store, ...a }) => listRecentRecallEventsPg({ handle: await open(store), ...a }),
    getRecall: async ({ store, ...a }) => getRecallEventByIdPg({ handle: await open(store), ...a }),
    listRecallsReturning: async ({ store, ...a }) => listRecallsReturningPg({ handle: await open(store), ...a }),
    listRatingQueue: async ({ store, ...a }) => listRatingQueuePg({ handle: await open(store), ...a }),
    rateRecallHit: async ({ store, ...a }) => rateRecallHitPg({ handle: await open(store), ...a }),
    getScoreDistribution: async ({ store }) => getRecallScoreDistributionPg({ handle: await open(store) }),
    getRecallMetrics: async ({ store, ...a }) => withStoreTx({ handle: await open(store), readOnly: true }, (tx) => getRecallMetricsPg({ tx, ...a })),
    runTraceRetention: async ({ store }) => runTraceRetentionPg({ handle: await open(store) }),
  };
}

/** The recall backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const recallBackend: () => RecallBackend = backendChooser(sqliteRecall, pgRecall);
