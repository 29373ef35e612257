import { z } from "zod";
import { categoryChild, categoryListResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { categoryPathSchema, listCategoryChildren, setCategoryDescription, setCategorySchema } from "@/lib/index/memories";
import { openIndexedStore } from "@/lib/index/reindex";
import { storeNameSchema } from "@/lib/db/store-names";

export const GET = defineRoute({
  name: "GET /stores/{store}/categories",
  auth: "read",
  response: categoryListResponse,
  params: z.object({ store: storeNameSchema }),
  query: z.object({ parent: categoryPathSchema.optional() }).strict(),
  handler: ({ params, query }) => ({
    parent: query.parent ?? null,
    categories: listCategoryChildren({ sqlite: openIndexedStore({ store: params.store }), parent: query.parent ?? null }),
  }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/categories",
  auth: "write",
  response: categoryChild,
  params: z.object({ store: storeNameSchema }),
  body: setCategorySchema,
  handler: ({ params, body }) => setCategoryDescription({ store: params.store, sqlite: openIndexedStore({ store: params.store }), input: body }),
});
