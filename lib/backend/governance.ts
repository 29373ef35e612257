import { beginSignInAttempt, settleSignInAttempt } from "../auth/login-throttle";
import { countUsers, getUserById, getUserByUsername, insertUser, listUsers, setUserDisabled, setUserPasswordHash, setUserRole } from "../auth/users";
import { createApiToken, listApiTokens, revokeApiToken, verifyApiToken, type AgentPrincipal } from "../auth/tokens";
import { getGovernance } from "../db/connection";
import { perEngine, type Engine } from "../db/engine";
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
  listDialecticSessionsByClientId,
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
  listTasksByClientId,
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
 * The governance ledger behind one interface (docs/ARCHITECTURE.md,
 * "Composition"): routes, MCP tools and bearer authentication call
 * governance() and never pick a backend. Each method takes the repository
 * function's argument without `handle`, so the interface is written once.
 */
/** A repository function over the ledger handle, as a method: the handle is the backend's. */
type Via<F> = F extends (a: infer A) => infer R ? (a: Omit<A, "handle">) => Promise<Awaited<R>> : never;

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
    listTasks: async ({ input, caller }: { input: ListTasksQuery; caller?: LedgerCaller }) => listTasksByFilter({ input, caller, handle: await ledger() }),
    getTaskStatus: via(getTaskStatusById),
    /** The operator's choice where owners share a task id. */
    listTasksByClientId: via(listTasksByClientId),
    recordRunStart: via(recordRunStart),
    recordRunFinish: via(recordRunFinish),
    recordValidation: via(recordValidation),
    recordProvenanceBatch: via(recordProvenanceBatch),
    getProofsByArtifact: async ({ input, caller }: { input: z.input<typeof artifactLookupSchema>; caller?: LedgerCaller }): Promise<ArtifactProofs> => getProofsByArtifact({ input, caller, handle: await ledger() }),
    recordOverride: via(recordOverride),
    createDialecticSession: via(createDialecticSession),
    postDialecticMessage: via(postDialecticMessage),
    getDialecticSessionForAgent: via(getDialecticSessionForAgent),
    /** The operator's view (dashboard, CLI): any session. */
    getDialecticSession: via(getDialecticSessionById),
    listDialecticSessionsByClientId: via(listDialecticSessionsByClientId),
    abandonDialecticSessionAsAdmin: via(abandonDialecticSessionAsAdmin),
    annotateDialecticSession: via(annotateDialecticSession),
    listDialecticAnnotations: via(listDialecticAnnotations),
    getDialecticActivity: via(getDialecticActivity),
    listDialecticSessions: via(listDialecticSessionsByAgent),
    claimDialecticSession: via(claimDialecticSession),
    abandonDialecticSession: via(abandonDialecticSession),
    verifyDialecticSession: via(verifyDialecticSession),
    sweepIdleSessions: via(sweepIdleSessionsAudited),
    /** One session or all, as a signed JSON snapshot; restore verifies every chain and never overwrites. */
    exportDialecticSessions: via(exportDialecticSessions),
    restoreDialecticSessions: via(restoreDialecticSessions),
    createApiToken: via(createApiToken),
    listApiTokens: via(listApiTokens),
    revokeApiToken: via(revokeApiToken),
    verifyApiToken: async ({ token }: { token: string }): Promise<AgentPrincipal | null> => verifyApiToken({ token, handle: await ledger() }),
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

export type GovernanceBackend = { kind: "sqlite" | "postgres" } & ReturnType<typeof ledgerMethods>;

/** The ledger on one engine: governance.db, or the PostgreSQL pool's public schema. */
export function governanceOn(engine: Engine): GovernanceBackend {
  const ledger = (): LedgerHandle | Promise<LedgerHandle> => (engine.kind === "pg" ? engine.pg : getGovernance());
  return {
    kind: engine.kind === "pg" ? "postgres" : "sqlite",
    ...ledgerMethods(ledger),
  };
}

/** The governance backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite. */
export const governance: () => GovernanceBackend = perEngine(governanceOn);
