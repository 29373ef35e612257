import * as sqlite from "../db/schema/governance";
import * as pg from "../db/schema/pg/governance";
import { tablePair } from "../db/port";

/** The ledger's tables in both schemas, for the repositories' port steps (lib/db/port.ts). */
export const ledgerTables = {
  users: tablePair(sqlite.users, pg.users),
  loginThrottle: tablePair(sqlite.loginThrottle, pg.loginThrottle),
  apiTokens: tablePair(sqlite.apiTokens, pg.apiTokens),
  auditLog: tablePair(sqlite.auditLog, pg.auditLog),
  tasks: tablePair(sqlite.tasks, pg.tasks),
  skillRuns: tablePair(sqlite.skillRuns, pg.skillRuns),
  validations: tablePair(sqlite.validations, pg.validations),
  provenance: tablePair(sqlite.provenance, pg.provenance),
  overrides: tablePair(sqlite.overrides, pg.overrides),
  dialecticSessions: tablePair(sqlite.dialecticSessions, pg.dialecticSessions),
  dialecticMessages: tablePair(sqlite.dialecticMessages, pg.dialecticMessages),
  dialecticAnnotations: tablePair(sqlite.dialecticAnnotations, pg.dialecticAnnotations),
  healthEvents: tablePair(sqlite.healthEvents, pg.healthEvents),
  storeStatusCurrent: tablePair(sqlite.storeStatusCurrent, pg.storeStatusCurrent),
};
