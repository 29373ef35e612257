import { nodeDeletedResponse, nodeDetailResponse, nodeResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { getNodeDetailById } from "@/lib/graph/node-detail";
import { deleteNode, updateNode, updateNodeInputSchema } from "@/lib/graph/nodes";
import { agentActor, openGraphStore, storeItemParams } from "@/lib/graph/store";

export const GET = defineRoute({
  name: "GET /stores/{store}/nodes/{id}",
  auth: "read",
  response: nodeDetailResponse,
  params: storeItemParams,
  handler: ({ params }) => getNodeDetailById({ handle: openGraphStore(params.store), id: params.id }),
});

export const PATCH = defineRoute({
  name: "PATCH /stores/{store}/nodes/{id}",
  auth: "write",
  response: nodeResponse,
  params: storeItemParams,
  body: updateNodeInputSchema,
  handler: ({ params, body }) => ({ node: updateNode({ handle: openGraphStore(params.store), id: params.id, input: body }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/nodes/{id}",
  auth: "write",
  response: nodeDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => deleteNode({ handle: openGraphStore(params.store), id: params.id, actor: agentActor(principal) }),
});
