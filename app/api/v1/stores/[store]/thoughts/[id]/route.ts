import { graphDeletedResponse, thoughtResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeItemParams } from "@/lib/api/params";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/thoughts/{id}",
  auth: "read",
  response: thoughtResponse,
  params: storeItemParams,
  handler: async ({ params }) => ({ thought: await graphBackend().getThought({ store: params.store, id: params.id }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/thoughts/{id}",
  auth: "write",
  response: graphDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => graphBackend().deleteThought({ store: params.store, id: params.id, actor: actorOf(principal) }),
});
