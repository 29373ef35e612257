import { nodeListResponse, nodeResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { createNode, createNodeInputSchema, listNodesByFilter, listNodesQuerySchema } from "@/lib/graph/nodes";
import { actorOf } from "@/lib/auth/actor";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/nodes",
  auth: "write",
  response: nodeResponse,
  params: storeParams,
  body: createNodeInputSchema,
  status: 201,
  handler: ({ params, body, principal }) => ({ node: createNode({ handle: openStore({ store: params.store }), input: body, actor: actorOf(principal) }) }),
});

export const GET = defineRoute({
  name: "GET /stores/{store}/nodes",
  auth: "read",
  response: nodeListResponse,
  params: storeParams,
  query: listNodesQuerySchema,
  handler: ({ params, query }) => listNodesByFilter({ handle: openStore({ store: params.store }), filter: query }),
});
