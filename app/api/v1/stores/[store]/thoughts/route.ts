import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { listThoughtsByFilter, listThoughtsQuerySchema, thinkInputSchema, thinkThought } from "@/lib/graph/thoughts";
import { actorOf } from "@/lib/auth/actor";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/thoughts",
  auth: "write",
  params: storeParams,
  body: thinkInputSchema,
  status: 201,
  handler: ({ params, body, principal }) => ({ thought: thinkThought({ handle: openStore({ store: params.store }), input: body, actor: actorOf(principal) }) }),
});

export const GET = defineRoute({
  name: "GET /stores/{store}/thoughts",
  auth: "read",
  params: storeParams,
  query: listThoughtsQuerySchema,
  handler: ({ params, query }) => listThoughtsByFilter({ handle: openStore({ store: params.store }), filter: query }),
});
