import { graphDeletedResponse, thoughtResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { deleteThought, getThoughtById } from "@/lib/graph/thoughts";
import { storeItemParams } from "@/lib/api/params";
import { actorOf } from "@/lib/auth/actor";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/thoughts/{id}",
  auth: "read",
  response: thoughtResponse,
  params: storeItemParams,
  handler: async ({ params }) => ({ thought: await getThoughtById({ handle: openStore({ store: params.store }), id: params.id }) }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}/thoughts/{id}",
  auth: "write",
  response: graphDeletedResponse,
  params: storeItemParams,
  handler: ({ params, principal }) => deleteThought({ handle: openStore({ store: params.store }), id: params.id, actor: actorOf(principal) }),
});
