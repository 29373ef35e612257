import * as sqlite from "../db/schema/recall";
import { embedQueue } from "../db/schema/embed";
import * as pg from "../db/schema/pg/store";
import { tablePair } from "../db/port";

/** Reflection recall's tables in both schemas, for the repositories' port steps (lib/db/port.ts). */
export const recallTables = {
  traces: tablePair(sqlite.reasoningTraces, pg.reasoningTraces),
  learnings: tablePair(sqlite.learnings, pg.learnings),
  settings: tablePair(sqlite.reflectionSettings, pg.reflectionSettings),
  events: tablePair(sqlite.recallEvents, pg.recallEvents),
  hits: tablePair(sqlite.recallEventHits, pg.recallEventHits),
  embedQueue: tablePair(embedQueue, pg.embedQueue),
};
