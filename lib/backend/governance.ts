import { beginSignInAttempt, settleSignInAttempt } from "../auth/login-throttle";
import { beginSignInAttemptPg, settleSignInAttemptPg } from "../auth/login-throttle-pg";
import { countUsers, getUserById, getUserByUsername, insertUser, listUsers, setUserDisabled, setUserPasswordHash, setUserRole } from "../auth/users";
import {
  countUsersPg,
  getUserByIdPg,
  getUserByUsernamePg,
  insertUserPg,
  listUsersPg,
  setUserDisabledPg,
  setUserPasswordHashPg,
  setUserRolePg,
} from "../auth/users-pg";
import { createApiTokenPg, listApiTokensPg, revokeApiTokenPg, verifyApiTokenPg } from "../auth/tokens-pg";
import { createApiToken, listApiTokens, revokeApiToken, verifyApiToken } from "../auth/tokens";
import { backendChooser, type PgGovernanceExecutor, type PgHandle } from "../db/pg";
import { listAuditTail, verifyAuditChain } from "../governance/audit";
import { countGovernanceRows } from "../governance/status";
import { countGovernanceRowsPg } from "../governance/status-pg";
import { listAuditTailPg, verifyAuditChainPg } from "../governance/audit-pg";
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
import { exportDialecticSessionsPg, restoreDialecticSessionsPg } from "../governance/dialectic-export-pg";
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
} from "../governance/ledger";
import {
  createTaskPg,
  getProofsByArtifactPg,
  getTaskStatusByIdPg,
  listTasksByFilterPg,
  recordOverridePg,
  recordProvenanceBatchPg,
  recordRunFinishPg,
  recordRunStartPg,
  recordValidationPg,
} from "../governance/ledger-pg";

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
 * Each method takes the PostgreSQL function's argument without `db`, so the
 * interface is written once, from the async side.
 */
type Args<F> = F extends (a: infer A) => unknown ? Omit<A, "db"> : never;
type Method<F> = F extends (a: never) => Promise<infer R> ? (a: Args<F>) => Promise<R> : never;

export type GovernanceBackend = {
  kind: "sqlite" | "postgres";
  createTask: Method<typeof createTaskPg>;
  listTasks: Method<typeof listTasksByFilterPg>;
  getTaskStatus: Method<typeof getTaskStatusByIdPg>;
  recordRunStart: Method<typeof recordRunStartPg>;
  recordRunFinish: Method<typeof recordRunFinishPg>;
  recordValidation: Method<typeof recordValidationPg>;
  recordProvenanceBatch: Method<typeof recordProvenanceBatchPg>;
  getProofsByArtifact: Method<typeof getProofsByArtifactPg>;
  recordOverride: Method<typeof recordOverridePg>;
  createDialecticSession: Method<typeof createDialecticSessionPg>;
  postDialecticMessage: Method<typeof postDialecticMessagePg>;
  getDialecticSessionForAgent: Method<typeof getDialecticSessionForAgentPg>;
  /** The operator's view (dashboard, CLI): any session. */
  getDialecticSession: Method<typeof getDialecticSessionByIdPg>;
  abandonDialecticSessionAsAdmin: Method<typeof abandonDialecticSessionAsAdminPg>;
  annotateDialecticSession: Method<typeof annotateDialecticSessionPg>;
  listDialecticAnnotations: Method<typeof listDialecticAnnotationsPg>;
  getDialecticActivity: Method<typeof getDialecticActivityPg>;
  listAuditTail: Method<typeof listAuditTailPg>;
  listDialecticSessions: Method<typeof listDialecticSessionsByAgentPg>;
  claimDialecticSession: Method<typeof claimDialecticSessionPg>;
  abandonDialecticSession: Method<typeof abandonDialecticSessionPg>;
  verifyDialecticSession: Method<typeof verifyDialecticSessionPg>;
  sweepIdleSessions: Method<typeof sweepIdleSessionsAuditedPg>;
  /** One session or all, as a signed JSON snapshot; restore verifies every chain and never overwrites. */
  exportDialecticSessions: Method<typeof exportDialecticSessionsPg>;
  restoreDialecticSessions: Method<typeof restoreDialecticSessionsPg>;
  createApiToken: Method<typeof createApiTokenPg>;
  listApiTokens: Method<typeof listApiTokensPg>;
  revokeApiToken: Method<typeof revokeApiTokenPg>;
  verifyApiToken: Method<typeof verifyApiTokenPg>;
  verifyAuditChain: Method<typeof verifyAuditChainPg>;
  countUsers: Method<typeof countUsersPg>;
  /** Users, active tokens and audit entries (the dashboard's overview). */
  countGovernanceRows: Method<typeof countGovernanceRowsPg>;
  /** With the password hash: for the credentials check only (lib/backend/users.ts). */
  getUserByUsername: Method<typeof getUserByUsernamePg>;
  getUserById: Method<typeof getUserByIdPg>;
  listUsers: Method<typeof listUsersPg>;
  /** Takes a hashed password: hashing is lib/backend/users.ts's, outside any transaction. */
  insertUser: Method<typeof insertUserPg>;
  setUserPasswordHash: Method<typeof setUserPasswordHashPg>;
  setUserRole: Method<typeof setUserRolePg>;
  setUserDisabled: Method<typeof setUserDisabledPg>;
  beginSignInAttempt: Method<typeof beginSignInAttemptPg>;
  settleSignInAttempt: Method<typeof settleSignInAttemptPg>;
};

/** The SQLite functions are synchronous; wrapped, a throw becomes a rejection like on PostgreSQL. */
const sqliteGovernance: GovernanceBackend = {
  kind: "sqlite",
  createTask: async (a) => createTask(a),
  listTasks: async ({ input, caller }) => listTasksByFilter(input, caller),
  getTaskStatus: async (a) => getTaskStatusById(a),
  recordRunStart: async (a) => recordRunStart(a),
  recordRunFinish: async (a) => recordRunFinish(a),
  recordValidation: async (a) => recordValidation(a),
  recordProvenanceBatch: async (a) => recordProvenanceBatch(a),
  getProofsByArtifact: async ({ input, caller }) => getProofsByArtifact(input, caller),
  recordOverride: async (a) => recordOverride(a),
  createDialecticSession: async (a) => createDialecticSession(a),
  postDialecticMessage: async (a) => postDialecticMessage(a),
  getDialecticSessionForAgent: async (a) => getDialecticSessionForAgent(a),
  getDialecticSession: async (a) => getDialecticSessionById(a),
  abandonDialecticSessionAsAdmin: async (a) => abandonDialecticSessionAsAdmin(a),
  annotateDialecticSession: async (a) => annotateDialecticSession(a),
  listDialecticAnnotations: async (a) => listDialecticAnnotations(a),
  getDialecticActivity: async (a) => getDialecticActivity(a),
  listAuditTail: async (a) => listAuditTail(a),
  listDialecticSessions: async (a) => listDialecticSessionsByAgent(a),
  claimDialecticSession: async (a) => claimDialecticSession(a),
  abandonDialecticSession: async (a) => abandonDialecticSession(a),
  verifyDialecticSession: async (a) => verifyDialecticSession(a),
  sweepIdleSessions: async (a) => sweepIdleSessionsAudited(a),
  exportDialecticSessions: async (a) => exportDialecticSessions(a),
  restoreDialecticSessions: async (a) => restoreDialecticSessions(a),
  createApiToken: async (a) => createApiToken(a),
  listApiTokens: async () => listApiTokens(),
  revokeApiToken: async (a) => revokeApiToken(a),
  verifyApiToken: async ({ token }) => verifyApiToken(token),
  verifyAuditChain: async () => verifyAuditChain(),
  countUsers: async () => countUsers(),
  countGovernanceRows: async () => countGovernanceRows(),
  getUserByUsername: async (a) => getUserByUsername(a),
  getUserById: async (a) => getUserById(a),
  listUsers: async () => listUsers(),
  insertUser: async (a) => insertUser(a),
  setUserPasswordHash: async (a) => setUserPasswordHash(a),
  setUserRole: async (a) => setUserRole(a),
  setUserDisabled: async (a) => setUserDisabled(a),
  beginSignInAttempt: async (a) => beginSignInAttempt(a),
  settleSignInAttempt: async (a) => settleSignInAttempt(a),
};

/** Every method awaits the process's pool (migrated on first use) and runs the PostgreSQL function on it. */
export function pgGovernance(handle: Promise<PgHandle> | PgHandle): GovernanceBackend {
  // The cast only drops `db` from the argument type: the argument is passed through with db added.
  const on = <F extends (a: never) => Promise<unknown>>(fn: F): Method<F> =>
    (async (a: object) => (fn as unknown as (a: object & { db: PgGovernanceExecutor }) => Promise<unknown>)({ ...a, db: (await handle).db })) as Method<F>;
  return {
    kind: "postgres",
    createTask: on(createTaskPg),
    listTasks: on(listTasksByFilterPg),
    getTaskStatus: on(getTaskStatusByIdPg),
    recordRunStart: on(recordRunStartPg),
    recordRunFinish: on(recordRunFinishPg),
    recordValidation: on(recordValidationPg),
    recordProvenanceBatch: on(recordProvenanceBatchPg),
    getProofsByArtifact: on(getProofsByArtifactPg),
    recordOverride: on(recordOverridePg),
    createDialecticSession: on(createDialecticSessionPg),
    postDialecticMessage: on(postDialecticMessagePg),
    getDialecticSessionForAgent: on(getDialecticSessionForAgentPg),
    getDialecticSession: on(getDialecticSessionByIdPg),
    abandonDialecticSessionAsAdmin: on(abandonDialecticSessionAsAdminPg),
    annotateDialecticSession: on(annotateDialecticSessionPg),
    listDialecticAnnotations: on(listDialecticAnnotationsPg),
    getDialecticActivity: on(getDialecticActivityPg),
    listAuditTail: on(listAuditTailPg),
    listDialecticSessions: on(listDialecticSessionsByAgentPg),
    claimDialecticSession: on(claimDialecticSessionPg),
    abandonDialecticSession: on(abandonDialecticSessionPg),
    verifyDialecticSession: on(verifyDialecticSessionPg),
    sweepIdleSessions: on(sweepIdleSessionsAuditedPg),
    exportDialecticSessions: on(exportDialecticSessionsPg),
    restoreDialecticSessions: on(restoreDialecticSessionsPg),
    createApiToken: on(createApiTokenPg),
    listApiTokens: on(listApiTokensPg),
    revokeApiToken: on(revokeApiTokenPg),
    verifyApiToken: on(verifyApiTokenPg),
    verifyAuditChain: on(verifyAuditChainPg),
    countUsers: on(countUsersPg),
    countGovernanceRows: on(countGovernanceRowsPg),
    getUserByUsername: on(getUserByUsernamePg),
    getUserById: on(getUserByIdPg),
    listUsers: on(listUsersPg),
    insertUser: on(insertUserPg),
    setUserPasswordHash: on(setUserPasswordHashPg),
    setUserRole: on(setUserRolePg),
    setUserDisabled: on(setUserDisabledPg),
    beginSignInAttempt: on(beginSignInAttemptPg),
    settleSignInAttempt: on(settleSignInAttemptPg),
  };
}

/** The governance backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite. */
export const governance: () => GovernanceBackend = backendChooser(sqliteGovernance, pgGovernance);

export function sqliteGovernanceBackend(): GovernanceBackend {
  return sqliteGovernance;
}
