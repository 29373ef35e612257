import { nodeListResponse, nodeResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { createNode, createNodeInputSchema, listNodesByFilter, listNodesQuerySchema } from "@/lib/graph/nodes";
import { agentActor, openGraphStore } from "@/lib/graph/store";

export const POST = defineRoute({
  name: "POST /stores/{store}/nodes",
  auth: "write",
  response: nodeResponse,
  params: storeParams,
  body: createNodeInputSchema,
  status: 201,
  handler: ({ params, body, principal }) => ({ node: createNode({ handle: openGraphStore(params.store), input: body, actor: agentActor(principal) }) }),
});

export const GET = defineRoute({
  name: "GET /stores/{store}/nodes",
  auth: "read",
  response: nodeListResponse,
  params: storeParams,
  query: listNodesQuerySchema,
  handler: ({ params, query }) => listNodesByFilter({ handle: openGraphStore(params.store), filter: query }),
});
