import { thoughtListResponse, thoughtResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { listThoughtsByFilter, listThoughtsQuerySchema, thinkInputSchema, thinkThought } from "@/lib/graph/thoughts";
import { actorOf } from "@/lib/auth/actor";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/thoughts",
  auth: "write",
  response: thoughtResponse,
  params: storeParams,
  body: thinkInputSchema,
  status: 201,
  handler: ({ params, body, principal }) => ({ thought: thinkThought({ handle: openStore({ store: params.store }), input: body, actor: actorOf(principal) }) }),
});

export const GET = defineRoute({
  name: "GET /stores/{store}/thoughts",
  auth: "read",
  response: thoughtListResponse,
  params: storeParams,
  query: listThoughtsQuerySchema,
  handler: ({ params, query }) => listThoughtsByFilter({ handle: openStore({ store: params.store }), filter: query }),
});
