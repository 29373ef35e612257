import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { categoryPathSchema, listCategoryChildren } from "@/lib/index/memories";
import { openIndexedStore } from "@/lib/index/reindex";
import { storeNameSchema } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/categories",
  auth: "read",
  params: z.object({ store: storeNameSchema }),
  query: z.object({ parent: categoryPathSchema.optional() }).strict(),
  handler: ({ params, query }) => ({
    parent: query.parent ?? null,
    categories: listCategoryChildren({ sqlite: openIndexedStore({ store: params.store }), parent: query.parent ?? null }),
  }),
});
