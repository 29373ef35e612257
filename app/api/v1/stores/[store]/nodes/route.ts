import { wrappedWithProposal } from "@/lib/index/proposals";
import { nodeCreatedResponse } from "@/lib/api/responses/proposals";
import { nodeListResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { createNodeInputSchema, listNodesQuerySchema } from "@/lib/graph/nodes";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

export const POST = defineRoute({
  name: "POST /stores/{store}/nodes",
  auth: "write",
  response: nodeCreatedResponse,
  params: storeParams,
  body: createNodeInputSchema,
  status: 201,
  handler: async ({ params, body, principal }) => wrappedWithProposal({ key: "node", item: await graphBackend().createNode({ store: params.store, input: body, actor: actorOf(principal) }) }),
});

export const GET = defineRoute({
  name: "GET /stores/{store}/nodes",
  auth: "read",
  response: nodeListResponse,
  params: storeParams,
  query: listNodesQuerySchema,
  handler: ({ params, query }) => graphBackend().listNodes({ store: params.store, filter: query }),
});
