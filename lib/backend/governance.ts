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
  type Task,
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

export type GovernanceBackend = {
  kind: "sqlite" | "postgres";
  createTask: Via<typeof createTask>;
  listTasks: (a: { input: ListTasksQuery; caller?: LedgerCaller }) => Promise<{ tasks: (Task & { runCount: number })[]; total: number }>;
  getTaskStatus: Via<typeof getTaskStatusById>;
  recordRunStart: Via<typeof recordRunStart>;
  recordRunFinish: Via<typeof recordRunFinish>;
  recordValidation: Via<typeof recordValidation>;
  recordProvenanceBatch: Via<typeof recordProvenanceBatch>;
  getProofsByArtifact: (a: { input: z.input<typeof artifactLookupSchema>; caller?: LedgerCaller }) => Promise<ArtifactProofs>;
  recordOverride: Via<typeof recordOverride>;
  createDialecticSession: Method<typeof createDialecticSessionPg>;
  postDialecticMessage: Method<typeof postDialecticMessagePg>;
  getDialecticSessionForAgent: Method<typeof getDialecticSessionForAgentPg>;
  /** The operator's view (dashboard, CLI): any session. */
  getDialecticSession: Method<typeof getDialecticSessionByIdPg>;
  abandonDialecticSessionAsAdmin: Method<typeof abandonDialecticSessionAsAdminPg>;
  annotateDialecticSession: Method<typeof annotateDialecticSessionPg>;
  listDialecticAnnotations: Method<typeof listDialecticAnnotationsPg>;
  getDialecticActivity: Method<typeof getDialecticActivityPg>;
  listAuditTail: (a: { limit?: number }) => Promise<AuditRow[]>;
  listDialecticSessions: Method<typeof listDialecticSessionsByAgentPg>;
  claimDialecticSession: Method<typeof claimDialecticSessionPg>;
  abandonDialecticSession: Method<typeof abandonDialecticSessionPg>;
  verifyDialecticSession: Method<typeof verifyDialecticSessionPg>;
  sweepIdleSessions: Method<typeof sweepIdleSessionsAuditedPg>;
  /** One session or all, as a signed JSON snapshot; restore verifies every chain and never overwrites. */
  exportDialecticSessions: Via<typeof exportDialecticSessions>;
  restoreDialecticSessions: Via<typeof restoreDialecticSessions>;
  createApiToken: Via<typeof createApiToken>;
  listApiTokens: Via<typeof listApiTokens>;
  revokeApiToken: Via<typeof revokeApiToken>;
  verifyApiToken: (a: { token: string }) => Promise<AgentPrincipal | null>;
  verifyAuditChain: (a: object) => Promise<AuditVerification>;
  countUsers: Via<typeof countUsers>;
  /** Users, active tokens and audit entries (the dashboard's overview). */
  countGovernanceRows: Via<typeof countGovernanceRows>;
  /** With the password hash: for the credentials check only (lib/backend/users.ts). */
  getUserByUsername: Via<typeof getUserByUsername>;
  getUserById: Via<typeof getUserById>;
  listUsers: Via<typeof listUsers>;
  /** Takes a hashed password: hashing is lib/backend/users.ts's, outside any transaction. */
  insertUser: Via<typeof insertUser>;
  setUserPasswordHash: Via<typeof setUserPasswordHash>;
  setUserRole: Via<typeof setUserRole>;
  setUserDisabled: Via<typeof setUserDisabled>;
  beginSignInAttempt: Via<typeof beginSignInAttempt>;
  settleSignInAttempt: Via<typeof settleSignInAttempt>;
};

type LedgerMethods = Pick<
  GovernanceBackend,
  | "createTask"
  | "listTasks"
  | "getTaskStatus"
  | "recordRunStart"
  | "recordRunFinish"
  | "recordValidation"
  | "recordProvenanceBatch"
  | "getProofsByArtifact"
  | "recordOverride"
  | "exportDialecticSessions"
  | "restoreDialecticSessions"
  | "createApiToken"
  | "listApiTokens"
  | "revokeApiToken"
  | "verifyApiToken"
  | "countUsers"
  | "countGovernanceRows"
  | "getUserByUsername"
  | "getUserById"
  | "listUsers"
  | "insertUser"
  | "setUserPasswordHash"
  | "setUserRole"
  | "setUserDisabled"
  | "beginSignInAttempt"
  | "settleSignInAttempt"
  | "listAuditTail"
  | "verifyAuditChain"
>;

/** The repositories written once over the ledger handle (lib/db/port.ts), on the handle `ledger` gives; a throw becomes a rejection on both. */
function ledgerMethods(ledger: () => LedgerHandle | Promise<LedgerHandle>): LedgerMethods {
  return {
    createTask: async (a) => createTask({ ...a, handle: await ledger() }),
    listTasks: async ({ input, caller }) => listTasksByFilter(input, caller, await ledger()),
    getTaskStatus: async (a) => getTaskStatusById({ ...a, handle: await ledger() }),
    recordRunStart: async (a) => recordRunStart({ ...a, handle: await ledger() }),
    recordRunFinish: async (a) => recordRunFinish({ ...a, handle: await ledger() }),
    recordValidation: async (a) => recordValidation({ ...a, handle: await ledger() }),
    recordProvenanceBatch: async (a) => recordProvenanceBatch({ ...a, handle: await ledger() }),
    getProofsByArtifact: async ({ input, caller }) => getProofsByArtifact(input, caller, await ledger()),
    recordOverride: async (a) => recordOverride({ ...a, handle: await ledger() }),
    exportDialecticSessions: async (a) => exportDialecticSessions({ ...a, handle: await ledger() }),
    restoreDialecticSessions: async (a) => restoreDialecticSessions({ ...a, handle: await ledger() }),
    createApiToken: async (a) => createApiToken({ ...a, handle: await ledger() }),
    listApiTokens: async (a) => listApiTokens({ ...a, handle: await ledger() }),
    revokeApiToken: async (a) => revokeApiToken({ ...a, handle: await ledger() }),
    verifyApiToken: async ({ token }) => verifyApiToken(token, await ledger()),
    countUsers: async (a) => countUsers({ ...a, handle: await ledger() }),
    countGovernanceRows: async (a) => countGovernanceRows({ ...a, handle: await ledger() }),
    getUserByUsername: async (a) => getUserByUsername({ ...a, handle: await ledger() }),
    getUserById: async (a) => getUserById({ ...a, handle: await ledger() }),
    listUsers: async (a) => listUsers({ ...a, handle: await ledger() }),
    insertUser: async (a) => insertUser({ ...a, handle: await ledger() }),
    setUserPasswordHash: async (a) => setUserPasswordHash({ ...a, handle: await ledger() }),
    setUserRole: async (a) => setUserRole({ ...a, handle: await ledger() }),
    setUserDisabled: async (a) => setUserDisabled({ ...a, handle: await ledger() }),
    beginSignInAttempt: async (a) => beginSignInAttempt({ ...a, handle: await ledger() }),
    settleSignInAttempt: async (a) => settleSignInAttempt({ ...a, handle: await ledger() }),
    listAuditTail: async (a) => listAuditTail({ ...a, handle: await ledger() }),
    verifyAuditChain: async () => verifyAuditChain({ handle: await ledger() }),
  };
}

/** The dialectic reviews and the audit tail: each engine's own functions until they are written over the port. */
type EngineMethods = Omit<GovernanceBackend, keyof LedgerMethods | "kind">;

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
