import type { AgentPrincipal } from "../auth/tokens";
import { hasScope } from "../auth/tokens";
import { AppError } from "../errors";

/** 201 for a new record, 200 when a retried request found the one it made before. */
export function respondCreated(body: unknown, created: boolean): Response {
  return Response.json(body, { status: created ? 201 : 200 });
}

/** The calling agent is always the token's agent id, never a body field. */
export function callerOf(principal: AgentPrincipal | null): { agentId: string; label: string; isAdmin: boolean } {
  if (!principal) throw new AppError("unauthorized", "missing bearer token");
  return { agentId: principal.agentId, label: principal.label, isAdmin: hasScope(principal, "admin") };
}
