import * as sqlite from "../db/schema/graph";
import * as pg from "../db/schema/pg/graph";
import { tablePair } from "../db/port";

/** The graph's tables in both schemas, for the repositories' port steps (lib/db/port.ts). */
export const graphTables = {
  chains: tablePair(sqlite.chains, pg.chains),
  thoughts: tablePair(sqlite.thoughts, pg.thoughts),
  kgNodes: tablePair(sqlite.kgNodes, pg.kgNodes),
  kgFrames: tablePair(sqlite.kgFrames, pg.kgFrames),
  kgRelations: tablePair(sqlite.kgRelations, pg.kgRelations),
  kgFrameEvidence: tablePair(sqlite.kgFrameEvidence, pg.kgFrameEvidence),
  kgRelationEvidence: tablePair(sqlite.kgRelationEvidence, pg.kgRelationEvidence),
  workingMemory: tablePair(sqlite.workingMemory, pg.workingMemory),
};
