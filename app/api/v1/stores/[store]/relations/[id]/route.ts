import { graphDeletedResponse, relationResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { deleteRelation, getRelationById, updateRelation, updateRelationInputSchema } from "@/lib/graph/relations";
import { storeItemParams } from "@/lib/api/params";
import { actorOf } from "@/lib/auth/actor";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/relations/{id}",
  auth: "read",
  response: relationResponse,
  params: storeItemParams,
  handler: ({ params }) => ({ relation: getRelationById({ handle: openStore({ store: params.store }), id: params.id }) }),
});

export const PATCH = defineRoute({
  name: "PATCH /stores/{store}/relations/{id}",
  auth: "write",
  response: relationResponse,
  params: storeItemParams,
  body: updateRelationInputSchema,
  handler: ({ params, body }) => ({ relation: updateRelation({ handle: openStore({ store: params.store }), id: params.id, input: body }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/relations/{id}",
  auth: "write",
  response: graphDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => deleteRelation({ handle: openStore({ store: params.store }), id: params.id, actor: actorOf(principal) }),
});
