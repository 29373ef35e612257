import { wrappedWithProposal } from "@/lib/index/proposals";
import { thoughtCreatedResponse } from "@/lib/api/responses/proposals";
import { thoughtListResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { listThoughtsQuerySchema, thinkInputSchema } from "@/lib/graph/thoughts";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

export const POST = defineRoute({
  name: "POST /stores/{store}/thoughts",
  auth: "write",
  response: thoughtCreatedResponse,
  params: storeParams,
  body: thinkInputSchema,
  status: 201,
  handler: async ({ params, body, principal }) => wrappedWithProposal({ key: "thought", item: await graphBackend().think({ store: params.store, input: body, actor: actorOf(principal) }) }),
});

export const GET = defineRoute({
  name: "GET /stores/{store}/thoughts",
  auth: "read",
  response: thoughtListResponse,
  params: storeParams,
  query: listThoughtsQuerySchema,
  handler: ({ params, query }) => graphBackend().listThoughts({ store: params.store, filter: query }),
});
