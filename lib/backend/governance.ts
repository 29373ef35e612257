import { beginSignInAttempt, settleSignInAttempt } from "../auth/login-throttle";
import { countUsers, getUserById, getUserByUsername, insertUser, listUsers, setUserDisabled, setUserPasswordHash, setUserRole } from "../auth/users";
import { createApiToken, listApiTokens, revokeApiToken, verifyApiToken, type AgentPrincipal } from "../auth/tokens";
import { getGovernance } from "../db/connection";
import { backendChooser, type PgGovernanceExecutor, type PgHandle } from "../db/pg";
import type { LedgerHandle } from "../db/port";
import { listAuditTail, verifyAuditChain } from "../governance/audit";
import { countGovernanceRows } from "../governance/status";
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
  createDialecticSession: Via<typeof createDialecticSession>;
  postDialecticMessage: Via<typeof postDialecticMessage>;
  getDialecticSessionForAgent: Via<typeof getDialecticSessionForAgent>;
  /** The operator's view (dashboard, CLI): any session. */
  getDialecticSession: Via<typeof getDialecticSessionById>;
  abandonDialecticSessionAsAdmin: Via<typeof abandonDialecticSessionAsAdmin>;
  annotateDialecticSession: Via<typeof annotateDialecticSession>;
  listDialecticAnnotations: Via<typeof listDialecticAnnotations>;
  getDialecticActivity: Via<typeof getDialecticActivity>;
  listAuditTail: Method<typeof listAuditTailPg>;
  listDialecticSessions: Via<typeof listDialecticSessionsByAgent>;
  claimDialecticSession: Via<typeof claimDialecticSession>;
  abandonDialecticSession: Via<typeof abandonDialecticSession>;
  verifyDialecticSession: Via<typeof verifyDialecticSession>;
  sweepIdleSessions: Via<typeof sweepIdleSessionsAudited>;
  /** One session or all, as a signed JSON snapshot; restore verifies every chain and never overwrites. */
  exportDialecticSessions: Via<typeof exportDialecticSessions>;
  restoreDialecticSessions: Via<typeof restoreDialecticSessions>;
  createApiToken: Via<typeof createApiToken>;
  listApiTokens: Via<typeof listApiTokens>;
  revokeApiToken: Via<typeof revokeApiToken>;
  verifyApiToken: (a: { token: string }) => Promise<AgentPrincipal | null>;
  verifyAuditChain: Method<typeof verifyAuditChainPg>;
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
  | "createDialecticSession"
  | "postDialecticMessage"
  | "getDialecticSessionForAgent"
  | "getDialecticSession"
  | "abandonDialecticSessionAsAdmin"
  | "annotateDialecticSession"
  | "listDialecticAnnotations"
  | "getDialecticActivity"
  | "listDialecticSessions"
  | "claimDialecticSession"
  | "abandonDialecticSession"
  | "verifyDialecticSession"
  | "sweepIdleSessions"
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
    createDialecticSession: async (a) => createDialecticSession({ ...a, handle: await ledger() }),
    postDialecticMessage: async (a) => postDialecticMessage({ ...a, handle: await ledger() }),
    getDialecticSessionForAgent: async (a) => getDialecticSessionForAgent({ ...a, handle: await ledger() }),
    getDialecticSession: async (a) => getDialecticSessionById({ ...a, handle: await ledger() }),
    abandonDialecticSessionAsAdmin: async (a) => abandonDialecticSessionAsAdmin({ ...a, handle: await ledger() }),
    annotateDialecticSession: async (a) => annotateDialecticSession({ ...a, handle: await ledger() }),
    listDialecticAnnotations: async (a) => listDialecticAnnotations({ ...a, handle: await ledger() }),
    getDialecticActivity: async (a) => getDialecticActivity({ ...a, handle: await ledger() }),
    listDialecticSessions: async (a) => listDialecticSessionsByAgent({ ...a, handle: await ledger() }),
    claimDialecticSession: async (a) => claimDialecticSession({ ...a, handle: await ledger() }),
    abandonDialecticSession: async (a) => abandonDialecticSession({ ...a, handle: await ledger() }),
    verifyDialecticSession: async (a) => verifyDialecticSession({ ...a, handle: await ledger() }),
    sweepIdleSessions: async (a) => sweepIdleSessionsAudited({ ...a, handle: await ledger() }),
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
  };
}

/** The SQLite functions are synchronous; wrapped, a throw becomes a rejection like on PostgreSQL. */
const sqliteGovernance: GovernanceBackend = {
  kind: "sqlite",
  ...ledgerMethods(() => getGovernance()),
  listAuditTail: async (a) => listAuditTail(a),
  verifyAuditChain: async () => verifyAuditChain(),
};

/** Every method awaits the process's pool (migrated on first use) and runs the PostgreSQL function on it. */
export function pgGovernance(handle: Promise<PgHandle> | PgHandle): GovernanceBackend {
  // The cast only drops `db` from the argument type: the argument is passed through with db added.
  const on = <F extends (a: never) => Promise<unknown>>(fn: F): Method<F> =>
    (async (a: object) => (fn as unknown as (a: object & { db: PgGovernanceExecutor }) => Promise<unknown>)({ ...a, db: (await handle).db })) as Method<F>;
  return {
    kind: "postgres",
    ...ledgerMethods(() => handle),
    listAuditTail: on(listAuditTailPg),
    verifyAuditChain: on(verifyAuditChainPg),
  };
}

/** The governance backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite. */
export const governance: () => GovernanceBackend = backendChooser(sqliteGovernance, pgGovernance);

export function sqliteGovernanceBackend(): GovernanceBackend {
  return sqliteGovernance;
}
