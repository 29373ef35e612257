import { z } from "zod";
import { categoryChild, categoryListResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { stores } from "@/lib/stores/backend";
import { categoryPathSchema, setCategorySchema } from "@/lib/index/memories";
import { storeNameSchema } from "@/lib/db/store-names";

export const GET = defineRoute({
  name: "GET /stores/{store}/categories",
  auth: "read",
  response: categoryListResponse,
  params: z.object({ store: storeNameSchema }),
  query: z.object({ parent: categoryPathSchema.optional() }).strict(),
  handler: async ({ params, query }) => ({
    parent: query.parent ?? null,
    categories: await stores().listCategoryChildren({ store: params.store, parent: query.parent ?? null }),
  }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/categories",
  auth: "write",
  response: categoryChild,
  params: z.object({ store: storeNameSchema }),
  body: setCategorySchema,
  handler: ({ params, body, principal }) => stores().setCategoryDescription({ store: params.store, input: body, actor: actorOf(principal) }),
});
