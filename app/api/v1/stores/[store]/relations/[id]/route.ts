import { graphDeletedResponse, relationResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { updateRelationInputSchema } from "@/lib/graph/relations";
import { storeItemParams } from "@/lib/api/params";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/relations/{id}",
  auth: "read",
  response: relationResponse,
  params: storeItemParams,
  handler: async ({ params }) => ({ relation: await graphBackend().getRelation({ store: params.store, id: params.id }) }),
});

export const PATCH = defineRoute({
  name: "PATCH /stores/{store}/relations/{id}",
  auth: "write",
  response: relationResponse,
  params: storeItemParams,
  body: updateRelationInputSchema,
  handler: async ({ params, body }) => ({ relation: await graphBackend().updateRelation({ store: params.store, id: params.id, input: body }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/relations/{id}",
  auth: "write",
  response: graphDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => graphBackend().deleteRelation({ store: params.store, id: params.id, actor: actorOf(principal) }),
});
