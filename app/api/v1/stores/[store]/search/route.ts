import { z } from "zod";
import { searchResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { searchInputSchema, searchStore, type SearchInput } from "@/lib/index/search";
import { storeNameSchema } from "@/lib/db/store-names";
import { openCoreFor, openStore } from "@/lib/stores/stores";

const params = z.object({ store: storeNameSchema });

/** The store opened once; core too when the caller asked for it (the wrapper checked the token may read it). */
function search({ store, input }: { store: string; input: SearchInput }) {
  const handle = openStore({ store });
  return searchStore({ handle, core: openCoreFor({ handle, includeCore: input.include_core }), input });
}

export const GET = defineRoute({
  name: "GET /stores/{store}/search",
  auth: "read",
  response: searchResponse,
  params,
  query: searchInputSchema,
  handler: ({ params, query }) => search({ store: params.store, input: query }),
});

export const POST = defineRoute({
  name: "POST /stores/{store}/search",
  auth: "read",
  response: searchResponse,
  params,
  body: searchInputSchema,
  handler: ({ params, body }) => search({ store: params.store, input: body }),
});
