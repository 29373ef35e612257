import { beginSignInAttempt, settleSignInAttempt } from "../auth/login-throttle";
import { countUsers, getUserById, getUserByUsername, insertUser, listUsers, setUserDisabled, setUserPasswordHash, setUserRole } from "../auth/users";
import { createApiToken, listApiTokens, revokeApiToken, verifyApiToken, type AgentPrincipal } from "../auth/tokens";
import { getGovernance } from "../db/connection";
import { perEngine, type Engine } from "../db/engine";
import type { PgGovernanceExecutor, PgHandle } from "../db/pg";
import type { LedgerHandle } from "../db/port";
import { listAuditTail, verifyAuditChain, type AuditVerification } from "../governance/audit";
import type { AuditRow } from "../db/schema/governance";
import { countGovernanceRows } from "../governance/status";
import {
  abandonDialecticSession,
  abandonDialecticSessionAsAdmin,
  annotateDialecticSession,
  claimDialecticSession,
  getDialecticActivity,
  getDialecticSessionById,
  listDialecticAnnotations,
  createDialecticSession,
  getDialecticSessionForAgent,
  listDialecticSessionsByAgent,
  postDialecticMessage,
  sweepIdleSessionsAudited,
  verifyDialecticSession,
} from "../governance/dialectic";
import {
  abandonDialecticSessionAsAdminPg,
  abandonDialecticSessionPg,
  annotateDialecticSessionPg,
  claimDialecticSessionPg,
  getDialecticActivityPg,
  getDialecticSessionByIdPg,
  listDialecticAnnotationsPg,
  createDialecticSessionPg,
  getDialecticSessionForAgentPg,
  listDialecticSessionsByAgentPg,
  postDialecticMessagePg,
  sweepIdleSessionsAuditedPg,
  verifyDialecticSessionPg,
} from "../governance/dialectic-pg";
import { exportDialecticSessions, restoreDialecticSessions } from "../governance/dialectic-export";
import type { z } from "zod";
import {
  createTask,
  getProofsByArtifact,
  getTaskStatusById,
  listTasksByFilter,
  recordOverride,
  recordProvenanceBatch,
  recordRunFinish,
  recordRunStart,
  recordValidation,
  type artifactLookupSchema,
  type ArtifactProofs,
  type LedgerCaller,
  type ListTasksQuery,
} from "../governance/ledger";

/**
 * The governance ledger behind one interface: tasks, runs, validations,
 * provenance, overrides, dialectic sessions, API tokens, the audit chain,
 * dashboard users and the login throttle.
 * Embedded SQLite (governance.db) by default; PostgreSQL when DATABASE_URL
 * is set. Routes, MCP tools and bearer authentication call governance() and
 * never pick a backend themselves. Both implementations share the zod
 * schemas, verdict, phase rules, signatures and retry rules (in the SQLite
 * modules); only the queries and the locking differ.
 *
 * Each method takes the domain function's argument without `handle` (the
 * repositories over lib/db/port.ts) or without `db` (the PostgreSQL twins
 * still beside their SQLite functions), so the interface is written once,
 * from the async side.
 */
type Args<F> = F extends (a: infer A) => unknown ? Omit<A, "db"> : never;
type Method<F> = F extends (a: never) => Promise<infer R> ? (a: Args<F>) => Promise<R> : never;
/** A repository function over the ledger handle, as a method: the handle is the backend's. */
type Via<F> = F extends (a: infer A) => infer R ? (a: Omit<A, "handle">) => Promise<Awaited<R>> : never;

/** The dialectic reviews: each engine's own functions until they are written over the port. */
type EngineMethods = {
  createDialecticSession: Method<typeof createDialecticSessionPg>;
  postDialecticMessage: Method<typeof postDialecticMessagePg>;
  getDialecticSessionForAgent: Method<typeof getDialecticSessionForAgentPg>;
  /** The operator's view (dashboard, CLI): any session. */
  getDialecticSession: Method<typeof getDialecticSessionByIdPg>;
  abandonDialecticSessionAsAdmin: Method<typeof abandonDialecticSessionAsAdminPg>;
  annotateDialecticSession: Method<typeof annotateDialecticSessionPg>;
  listDialecticAnnotations: Method<typeof listDialecticAnnotationsPg>;
  getDialecticActivity: Method<typeof getDialecticActivityPg>;
  listDialecticSessions: Method<typeof listDialecticSessionsByAgentPg>;
  claimDialecticSession: Method<typeof claimDialecticSessionPg>;
  abandonDialecticSession: Method<typeof abandonDialecticSessionPg>;
  verifyDialecticSession: Method<typeof verifyDialecticSessionPg>;
  sweepIdleSessions: Method<typeof sweepIdleSessionsAuditedPg>;
};

/**
 * The repositories written once over the ledger handle (lib/db/port.ts), on
 * the handle `ledger` gives; a throw becomes a rejection on both. A new
 * ledger operation is one line here.
 */
function ledgerMethods(ledger: () => LedgerHandle | Promise<LedgerHandle>) {
  // The cast only drops `handle` from the argument type: the argument is passed through with the handle added.
  const via = <F extends (a: never) => unknown>(fn: F): Via<F> => (async (a: object) => (fn as unknown as (a: object) => unknown)({ ...a, handle: await ledger() })) as Via<F>;
  return {
    createTask: via(createTask),
    listTasks: async ({ input, caller }: { input: ListTasksQuery; caller?: LedgerCaller }) => listTasksByFilter(input, caller, await ledger()),
    getTaskStatus: via(getTaskStatusById),
    recordRunStart: via(recordRunStart),
    recordRunFinish: via(recordRunFinish),
    recordValidation: via(recordValidation),
    recordProvenanceBatch: via(recordProvenanceBatch),
    getProofsByArtifact: async ({ input, caller }: { input: z.input<typeof artifactLookupSchema>; caller?: LedgerCaller }): Promise<ArtifactProofs> => getProofsByArtifact(input, caller, await ledger()),
    recordOverride: via(recordOverride),
    /** One session or all, as a signed JSON snapshot; restore verifies every chain and never overwrites. */
    exportDialecticSessions: via(exportDialecticSessions),
    restoreDialecticSessions: via(restoreDialecticSessions),
    createApiToken: via(createApiToken),
    listApiTokens: via(listApiTokens),
    revokeApiToken: via(revokeApiToken),
    verifyApiToken: async ({ token }: { token: string }): Promise<AgentPrincipal | null> => verifyApiToken(token, await ledger()),
    countUsers: via(countUsers),
    /** Users, active tokens and audit entries (the dashboard's overview). */
    countGovernanceRows: via(countGovernanceRows),
    /** With the password hash: for the credentials check only (lib/backend/users.ts). */
    getUserByUsername: via(getUserByUsername),
    getUserById: via(getUserById),
    listUsers: via(listUsers),
    /** Takes a hashed password: hashing is lib/backend/users.ts's, outside any transaction. */
    insertUser: via(insertUser),
    setUserPasswordHash: via(setUserPasswordHash),
    setUserRole: via(setUserRole),
    setUserDisabled: via(setUserDisabled),
    beginSignInAttempt: via(beginSignInAttempt),
    settleSignInAttempt: via(settleSignInAttempt),
    listAuditTail: async (a: { limit?: number }): Promise<AuditRow[]> => listAuditTail({ ...a, handle: await ledger() }),
    verifyAuditChain: async (_a: object = {}): Promise<AuditVerification> => verifyAuditChain({ handle: await ledger() }),
  };
}

export type GovernanceBackend = { kind: "sqlite" | "postgres" } & ReturnType<typeof ledgerMethods> & EngineMethods;

/** The SQLite functions are synchronous; wrapped, a throw becomes a rejection like on PostgreSQL. */
const sqliteEngineMethods: EngineMethods = {
  createDialecticSession: async (a) => createDialecticSession(a),
  postDialecticMessage: async (a) => postDialecticMessage(a),
  getDialecticSessionForAgent: async (a) => getDialecticSessionForAgent(a),
  getDialecticSession: async (a) => getDialecticSessionById(a),
  abandonDialecticSessionAsAdmin: async (a) => abandonDialecticSessionAsAdmin(a),
  annotateDialecticSession: async (a) => annotateDialecticSession(a),
  listDialecticAnnotations: async (a) => listDialecticAnnotations(a),
  getDialecticActivity: async (a) => getDialecticActivity(a),
  listDialecticSessions: async (a) => listDialecticSessionsByAgent(a),
  claimDialecticSession: async (a) => claimDialecticSession(a),
  abandonDialecticSession: async (a) => abandonDialecticSession(a),
  verifyDialecticSession: async (a) => verifyDialecticSession(a),
  sweepIdleSessions: async (a) => sweepIdleSessionsAudited(a),
};

/** Every method awaits the process's pool (migrated on first use) and runs the PostgreSQL function on it. */
function pgEngineMethods(handle: Promise<PgHandle>): EngineMethods {
  // The cast only drops `db` from the argument type: the argument is passed through with db added.
  const on = <F extends (a: never) => Promise<unknown>>(fn: F): Method<F> =>
    (async (a: object) => (fn as unknown as (a: object & { db: PgGovernanceExecutor }) => Promise<unknown>)({ ...a, db: (await handle).db })) as Method<F>;
  return {
    createDialecticSession: on(createDialecticSessionPg),
    postDialecticMessage: on(postDialecticMessagePg),
    getDialecticSessionForAgent: on(getDialecticSessionForAgentPg),
    getDialecticSession: on(getDialecticSessionByIdPg),
    abandonDialecticSessionAsAdmin: on(abandonDialecticSessionAsAdminPg),
    annotateDialecticSession: on(annotateDialecticSessionPg),
    listDialecticAnnotations: on(listDialecticAnnotationsPg),
    getDialecticActivity: on(getDialecticActivityPg),
    listDialecticSessions: on(listDialecticSessionsByAgentPg),
    claimDialecticSession: on(claimDialecticSessionPg),
    abandonDialecticSession: on(abandonDialecticSessionPg),
    verifyDialecticSession: on(verifyDialecticSessionPg),
    sweepIdleSessions: on(sweepIdleSessionsAuditedPg),
  };
}

/** The ledger on one engine: governance.db, or the PostgreSQL pool's public schema. */
export function governanceOn(engine: Engine): GovernanceBackend {
  const ledger = (): LedgerHandle | Promise<LedgerHandle> => (engine.kind === "pg" ? engine.pg : getGovernance());
  return {
    kind: engine.kind === "pg" ? "postgres" : "sqlite",
    ...ledgerMethods(ledger),
    ...(engine.kind === "pg" ? pgEngineMethods(engine.pg) : sqliteEngineMethods),
  };
}

/** The governance backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite. */
export const governance: () => GovernanceBackend = perEngine(governanceOn);
