import { z } from "zod";
import { tokenInfo } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";

export const DELETE = defineRoute({
  name: "DELETE /tokens/{id}",
  auth: "admin",
  response: tokenInfo,
  allStores: true,
  params: z.object({ id: z.coerce.number().int().positive() }),
  handler: ({ params, principal }) => governance().revokeApiToken({ id: params.id, actor: `agent:${principal?.agentId}` }),
});
