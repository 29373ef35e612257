import { byStore, perEngine, type Engine } from "../db/engine";
import { refusingArchivedWrites } from "../db/store-lifecycle";
import { storeEngineOf } from "../stores/backend";
import { getRecallEventById, getRecallMetrics, listRatingQueue, listRecallsReturning, listRecentRecallEvents, rateRecallHit } from "./events";
import { getRecallScoreDistribution } from "./quality";
import { getLearningById, listLearnings, recordLearning } from "./learnings";
import { getReflectionOverview } from "./overview";
import { recallReflections, type RecallResult } from "./recall";
import { withFlags } from "../poison";
import { pgRecall } from "./engines/pg";
import { sqliteRecall } from "./engines/sqlite";
import { updateReflectionSettings } from "./settings";
import { getTraceById, listTraces, recordTrace, runTraceRetention } from "./traces";
import { factsOf, flaggingContradictions } from "../index/facts";
import { proposing } from "../index/proposals";

/**
 * Reflection recall (traces, learnings, recall, settings, overview) behind one interface, on SQLite stores or
 * PostgreSQL (docs/ARCHITECTURE.md). Here, not in stores(), because recall sits above stores. An unknown store is a 404 on both.
 */

export type RecallBackend = ReturnType<typeof recallOn>;

/** A recall answer as shown: each hit and each piece of guidance with the flags of the text it shows (lib/poison.ts). */
function flaggedRecall(r: RecallResult) {
  const warning = r.guidance.past_failure_warning;
  return {
    ...r,
    traces: r.traces.map((h) => withFlags({ item: h, fields: { summary: h.summary, intent: h.intent, key_issue: h.key_issue } })),
    learnings: r.learnings.map((h) => withFlags({ item: h, fields: { summary: h.summary, predicate: h.predicate, description: h.description } })),
    guidance: {
      past_failure_warning: warning && withFlags({ item: warning, fields: { intent: warning.intent, key_issue: warning.key_issue } }),
      aligned_preferences: r.guidance.aligned_preferences.map((p) => withFlags({ item: p, fields: { predicate: p.predicate, description: p.description } })),
    },
  };
}

/**
 * Recall on one engine: the repositories take either engine's handle
 * (lib/db/port.ts), so only how a store opens and recall's full-text and
 * vector legs (lib/recall/engines/) differ, picked here. Every method
 * is async, so a SQLite throw becomes a rejection as on PostgreSQL.
 */
export function recallOn(engine: Engine) {
  const on = byStore(storeEngineOf(engine).open);
  const recallEngine = engine.kind === "pg" ? pgRecall : sqliteRecall;
  /** Writes an archived store refuses (409 store_archived), whichever surface asks. */
  const writes = { recordTrace: on(recordTrace), recordLearning: proposing({
      kind: "learning", facts: factsOf({ kind: "learning" }),
      open: storeEngineOf(engine).open,
      createIn: recordLearning,
      idOf: (r) => String(r.learning.id),
      actorOf: (a) => `agent:${a.agentId}`,
      isNew: (r) => !r.deduped,
    }), updateReflectionSettings: on(updateReflectionSettings), rateRecallHit: on(rateRecallHit) };
  const recall = {
    ...writes,
    listTraces: on(listTraces),
    getTrace: on(getTraceById),
    listLearnings: on(listLearnings),
    getLearning: on(getLearningById),
    recall: on(async (a: Omit<Parameters<typeof recallReflections>[0], "engine">) => flaggedRecall(await recallReflections({ engine: recallEngine, ...a }))),
    getReflectionOverview: on(getReflectionOverview),
    /** The recall log, as the dashboard reads and rates it. */
    listRecentRecalls: on(listRecentRecallEvents),
    getRecall: on(getRecallEventById),
    listRecallsReturning: on(listRecallsReturning),
    listRatingQueue: on(listRatingQueue),
    getScoreDistribution: on(getRecallScoreDistribution),
    /** Recall hit rate, precision and latency per time bucket since `since` (buckets without recalls are left out). */
    getRecallMetrics: on(getRecallMetrics),
    /** Apply the store's trace retention (TTL, then the cap) now. */
    runTraceRetention: on(runTraceRetention),
  };
  // Facts (lib/index/facts.ts): a single learning read carries its unresolved contradictions in its flags.
  recall.getLearning = flaggingContradictions({ kind: "learning", open: storeEngineOf(engine).open, get: recall.getLearning, idOf: (l) => String(l.id) });
  return refusingArchivedWrites({ backend: recall, writes: Object.keys(writes) as (keyof typeof writes)[] });
}

/** The recall backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite (the same choice as stores()). */
export const recallBackend: () => RecallBackend = perEngine(recallOn);
