/**
 * Exported lib/ functions that still take positional parameters, by file, with the reason.
 * This list only shrinks: convert a function to one object argument and drop its name here.
 */
const positional = {
  "lib/collections.ts": { reason: "(map, key, value) like Map.set, used on hot loops", names: ["pushTo"] },
  "lib/db/port.ts": { reason: "the query port: (table, values/where) and (handle, op) read as Drizzle's builder and transaction calls at every query", names: ["tablePair", "storeLock", "rows", "row", "count", "insert", "insertOrIgnore", "insertMany", "insertManyOrIgnore", "upsert", "update", "remove", "select", "withinBudget", "read", "write", "readLedger", "writeLedger", "inCallerTx"] },
  "lib/eval/content.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["readProbeSources"] },
  "lib/eval/probes.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["dropAThird", "reword"] },
  "lib/eval/score.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["rankOf", "scoreOf", "fellBeyondNoise"] },
  "lib/eval/self-recall.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["changeBetween", "gateScores"] },
  "lib/eval/schedule.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["dueSince"] },
  "lib/format.ts": { reason: "(value, options) like Intl's formatters", names: ["formatDecimal", "formatQuantity", "formatPercent", "formatNumber", "formatDateTime", "formatRelative"] },
  "lib/graph/nodes.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["requireNode"] },
  "lib/index/engines/pg-fulltext.ts": { reason: "hot synchronous scoring helpers on the per-term path", names: ["impactOf", "impactBound"] },
  "lib/log.ts": { reason: "(level, message, fields) like console's methods", names: ["log"] },
  "lib/recall/events.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["recallEventRows"] },
  "lib/recall/recall.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["lexicalSimilarities"] },
  "lib/recall/sanitize.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["assertSanitizeBudget"] },
  "lib/recall/settings.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["applySettingsPatch"] },
  "lib/recall/vector-info.ts": { reason: "not yet converted (this area is being reworked separately)", names: ["encodedJson", "atLeast"] },
  "lib/retrieval/fts5-bm25.ts": { reason: "hot synchronous scoring helpers, called per term or per row", names: ["bm25Part", "ftsIdf", "readVarints", "docsizeLength"] },
  "lib/retrieval/fusion.ts": { reason: "hot synchronous scoring helpers, called per term or per row", names: ["rrfTerm", "recencyDecay"] },
  "lib/retrieval/match.ts": { reason: "not yet converted", names: ["queryWords", "contentWords", "matchTerms", "buildFtsMatch", "matchExpression", "exactFormShare", "adjacentPairShare"] },
};

export default positional;
