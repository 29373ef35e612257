import { isUnrestrictedAdmin, type AgentPrincipal } from "../auth/tokens";
import { AppError } from "../errors";
import { answerWithStatus, type Answer } from "../http/answer";

/** 201 for a new record, 200 when a retried request found the one it made before (or merged into one). */
export function respondCreated({ body, created }: { body: unknown; created: boolean }): Answer {
  return answerWithStatus({ body, status: created ? 201 : 200 });
}

export type Caller = { agentId: string; label: string; isAdmin: boolean; stores: readonly string[] | null };

/**
 * The calling agent is always the token's agent id, never a body field. It is
 * an admin of the ledger and dialectic only with an unrestricted admin token
 * (a store-limited admin is an admin of its stores, not of every agent's tasks).
 */
export function callerOf(principal: AgentPrincipal | null): Caller {
  if (!principal) throw new AppError("unauthorized", "missing bearer token");
  return { agentId: principal.agentId, label: principal.label, isAdmin: isUnrestrictedAdmin(principal), stores: principal.stores };
}
