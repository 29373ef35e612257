import { graphDeletedResponse, relationResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { deleteRelation, getRelationById, updateRelation, updateRelationInputSchema } from "@/lib/graph/relations";
import { agentActor, openGraphStore, storeItemParams } from "@/lib/graph/store";

export const GET = defineRoute({
  name: "GET /stores/{store}/relations/{id}",
  auth: "read",
  response: relationResponse,
  params: storeItemParams,
  handler: ({ params }) => ({ relation: getRelationById({ handle: openGraphStore(params.store), id: params.id }) }),
});

export const PATCH = defineRoute({
  name: "PATCH /stores/{store}/relations/{id}",
  auth: "write",
  response: relationResponse,
  params: storeItemParams,
  body: updateRelationInputSchema,
  handler: ({ params, body }) => ({ relation: updateRelation({ handle: openGraphStore(params.store), id: params.id, input: body }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/relations/{id}",
  auth: "write",
  response: graphDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => deleteRelation({ handle: openGraphStore(params.store), id: params.id, actor: agentActor(principal) }),
});
