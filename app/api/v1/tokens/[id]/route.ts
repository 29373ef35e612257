import { z } from "zod";
import { tokenInfo } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { revokeApiToken } from "@/lib/auth/tokens";

export const DELETE = defineRoute({
  name: "DELETE /tokens/{id}",
  auth: "admin",
  response: tokenInfo,
  allStores: true,
  params: z.object({ id: z.coerce.number().int().positive() }),
  handler: ({ params, principal }) => revokeApiToken({ id: params.id, actor: `agent:${principal?.agentId}` }),
});
