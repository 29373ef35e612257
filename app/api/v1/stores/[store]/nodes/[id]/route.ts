import { nodeDeletedResponse, nodeDetailResponse, nodeResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { updateNodeInputSchema } from "@/lib/graph/nodes";
import { storeItemParams } from "@/lib/api/params";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/nodes/{id}",
  auth: "read",
  response: nodeDetailResponse,
  params: storeItemParams,
  handler: ({ params }) => graphBackend().getNodeDetail({ store: params.store, id: params.id }),
});

export const PATCH = defineRoute({
  name: "PATCH /stores/{store}/nodes/{id}",
  auth: "write",
  response: nodeResponse,
  params: storeItemParams,
  body: updateNodeInputSchema,
  handler: async ({ params, body }) => ({ node: await graphBackend().updateNode({ store: params.store, id: params.id, input: body }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/nodes/{id}",
  auth: "write",
  response: nodeDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => graphBackend().deleteNode({ store: params.store, id: params.id, actor: actorOf(principal) }),
});
