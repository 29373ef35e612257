import "server-only";
import { randomUUID } from "node:crypto";
import { errorResponse } from "@/lib/api/route";
import type { PublicUser, Role } from "@/lib/auth/users";
import { requireRoleForAction } from "./session";

type DashboardRouteContext<P> = { params: Promise<P> };

/**
 * The one wrapper for dashboard route handlers (downloads and the like):
 * the session and role are re-checked here, as server actions do (proxy.ts
 * gates the path, but a handler is an endpoint of its own), and anything
 * thrown answers with the JSON error envelope and its status, never Next's
 * HTML 500.
 */
export function defineDashboardRoute<P>({
  role = "viewer",
  handler,
}: {
  role?: Role;
  handler: (args: { request: Request; params: P; user: PublicUser }) => Response | Promise<Response>;
}): (request: Request, context: DashboardRouteContext<P>) => Promise<Response> {
  return async (request, context) => {
    try {
      const user = await requireRoleForAction(role);
      return await handler({ request, params: await context.params, user });
    } catch (e) {
      return errorResponse({ error: e, requestId: randomUUID() });
    }
  };
}
