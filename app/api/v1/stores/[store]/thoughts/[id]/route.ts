import { graphDeletedResponse, thoughtResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { agentActor, openGraphStore, storeItemParams } from "@/lib/graph/store";
import { deleteThought, getThoughtById } from "@/lib/graph/thoughts";

export const GET = defineRoute({
  name: "GET /stores/{store}/thoughts/{id}",
  auth: "read",
  response: thoughtResponse,
  params: storeItemParams,
  handler: async ({ params }) => ({ thought: await getThoughtById({ handle: openGraphStore(params.store), id: params.id }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/thoughts/{id}",
  auth: "write",
  response: graphDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => deleteThought({ handle: openGraphStore(params.store), id: params.id, actor: agentActor(principal) }),
});
