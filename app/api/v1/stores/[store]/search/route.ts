import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { openIndexedStore } from "@/lib/index/reindex";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { storeNameSchema } from "@/lib/stores/stores";

const params = z.object({ store: storeNameSchema });

export const GET = defineRoute({
  name: "GET /stores/{store}/search",
  auth: "read",
  params,
  query: searchInputSchema,
  handler: ({ params, query }) => {
    openIndexedStore({ store: params.store });
    return searchStore({ store: params.store, input: query });
  },
});

export const POST = defineRoute({
  name: "POST /stores/{store}/search",
  auth: "read",
  params,
  body: searchInputSchema,
  handler: ({ params, body }) => {
    openIndexedStore({ store: params.store });
    return searchStore({ store: params.store, input: body });
  },
});
