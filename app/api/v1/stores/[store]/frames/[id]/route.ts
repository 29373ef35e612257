import { frameResponse, graphDeletedResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { deleteFrame, getFrameById, updateFrame, updateFrameInputSchema } from "@/lib/graph/frames";
import { agentActor, openGraphStore, storeItemParams } from "@/lib/graph/store";

export const GET = defineRoute({
  name: "GET /stores/{store}/frames/{id}",
  auth: "read",
  response: frameResponse,
  params: storeItemParams,
  handler: ({ params }) => ({ frame: getFrameById({ handle: openGraphStore(params.store), id: params.id }) }),
});

export const PATCH = defineRoute({
  name: "PATCH /stores/{store}/frames/{id}",
  auth: "write",
  response: frameResponse,
  params: storeItemParams,
  body: updateFrameInputSchema,
  handler: ({ params, body }) => ({ frame: updateFrame({ handle: openGraphStore(params.store), id: params.id, input: body }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/frames/{id}",
  auth: "write",
  response: graphDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => deleteFrame({ handle: openGraphStore(params.store), id: params.id, actor: agentActor(principal) }),
});
