import { AppError } from "../errors";
import type { AgentPrincipal } from "./tokens";
import type { PublicUser } from "./users";

/**
 * Who did something, as written to audit rows and job rows:
 * `agent:<agentId>` (a bearer token, REST or MCP), `user:<username>` (a person
 * on the dashboard), `cli:<os user>` (the local operator), `system:<part>`
 * (the server acting on its own, e.g. `system:jobs`).
 */
export type Actor = `agent:${string}` | `user:${string}` | `cli:${string}` | `system:${string}`;

/** The one place an actor string is built; callers never template their own. */
export function actorOf(who: AgentPrincipal | Pick<PublicUser, "username"> | "cli" | null): Actor {
  // A missing principal means the route was public or auth was skipped: recording "agent:undefined" would hide who it was.
  if (who === null) throw new AppError("unauthorized", "missing bearer token");
  if (who === "cli") return `cli:${process.env.USER ?? "local"}`;
  if ("agentId" in who) return `agent:${who.agentId}`;
  return `user:${who.username}`;
}
