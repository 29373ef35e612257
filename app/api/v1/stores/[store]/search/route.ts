import { z } from "zod";
import { searchResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { stores } from "@/lib/stores/backend";
import { commonSearchQuery, searchInputSchema } from "@/lib/index/search";
import { storeNameSchema } from "@/lib/db/store-names";
import { callerOf } from "@/lib/api/respond";
import { countedRetrieval } from "@/lib/governance/retrieval-counts";

const params = z.object({ store: storeNameSchema });

// Core is searched too when the caller asked for it (the wrapper checked the token may read it).
export const GET = defineRoute({
  name: "GET /stores/{store}/search",
  auth: "read",
  response: searchResponse,
  params,
  query: searchInputSchema,
  commonQuery: commonSearchQuery,
  handler: ({ params, query, principal }) => countedRetrieval({ kind: "search", agentId: callerOf(principal).agentId, store: params.store, work: () => stores().search({ store: params.store, input: query }) }),
});

export const POST = defineRoute({
  name: "POST /stores/{store}/search",
  auth: "read",
  response: searchResponse,
  params,
  body: searchInputSchema,
  handler: ({ params, body, principal }) => countedRetrieval({ kind: "search", agentId: callerOf(principal).agentId, store: params.store, work: () => stores().search({ store: params.store, input: body }) }),
});
