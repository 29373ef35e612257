import { frameResponse, graphDeletedResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { updateFrameInputSchema } from "@/lib/graph/frames";
import { storeItemParams } from "@/lib/api/params";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/frames/{id}",
  auth: "read",
  response: frameResponse,
  params: storeItemParams,
  handler: async ({ params }) => ({ frame: await graphBackend().getFrame({ store: params.store, id: params.id }) }),
});

export const PATCH = defineRoute({
  name: "PATCH /stores/{store}/frames/{id}",
  auth: "write",
  response: frameResponse,
  params: storeItemParams,
  body: updateFrameInputSchema,
  handler: async ({ params, body }) => ({ frame: await graphBackend().updateFrame({ store: params.store, id: params.id, input: body }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/frames/{id}",
  auth: "write",
  response: graphDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => graphBackend().deleteFrame({ store: params.store, id: params.id, actor: actorOf(principal) }),
});
