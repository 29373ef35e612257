import { thoughtListResponse, thoughtResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { agentActor, openGraphStore } from "@/lib/graph/store";
import { listThoughtsByFilter, listThoughtsQuerySchema, thinkInputSchema, thinkThought } from "@/lib/graph/thoughts";

export const POST = defineRoute({
  name: "POST /stores/{store}/thoughts",
  auth: "write",
  response: thoughtResponse,
  params: storeParams,
  body: thinkInputSchema,
  status: 201,
  handler: ({ params, body, principal }) => ({ thought: thinkThought({ handle: openGraphStore(params.store), input: body, actor: agentActor(principal) }) }),
});

export const GET = defineRoute({
  name: "GET /stores/{store}/thoughts",
  auth: "read",
  response: thoughtListResponse,
  params: storeParams,
  query: listThoughtsQuerySchema,
  handler: ({ params, query }) => listThoughtsByFilter({ handle: openGraphStore(params.store), filter: query }),
});
