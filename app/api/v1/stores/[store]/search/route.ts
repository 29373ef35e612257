import { z } from "zod";
import { searchResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { openIndexedStore } from "@/lib/index/reindex";
import { searchInputSchema } from "@/lib/index/search";
import { searchAnyMode } from "@/lib/index/semantic-search";
import { storeNameSchema } from "@/lib/db/store-names";

const params = z.object({ store: storeNameSchema });

export const GET = defineRoute({
  name: "GET /stores/{store}/search",
  auth: "read",
  response: searchResponse,
  params,
  query: searchInputSchema,
  handler: async ({ params, query }) => {
    openIndexedStore({ store: params.store });
    return searchAnyMode({ store: params.store, input: query });
  },
});

export const POST = defineRoute({
  name: "POST /stores/{store}/search",
  auth: "read",
  response: searchResponse,
  params,
  body: searchInputSchema,
  handler: async ({ params, body }) => {
    openIndexedStore({ store: params.store });
    return searchAnyMode({ store: params.store, input: body });
  },
});
