import { contradictionsQuerySchema, listContradictionsIn } from "@/lib/api/contradictions";
import { storeParams } from "@/lib/api/params";
import { contradictionsResponse } from "@/lib/api/responses/items";
import { defineRoute } from "@/lib/api/route";

export const GET = defineRoute({
  name: "GET /stores/{store}/contradictions",
  auth: "read",
  description: "The store's unresolved contradictions: facts of one subject and property that state different values for the same time, each pair once, newest first. Retiring either item resolves one.",
  response: contradictionsResponse,
  params: storeParams,
  query: contradictionsQuerySchema,
  handler: ({ params, query }) => listContradictionsIn({ store: params.store, limit: query.limit }),
});
