import { z } from "zod";
import { categoryChild, categoryListResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { stores } from "@/lib/stores/backend";
import { categoryPageSchema, categoryPathSchema, setCategorySchema } from "@/lib/index/memories";
import { storeNameSchema } from "@/lib/db/store-names";

export const GET = defineRoute({
  name: "GET /stores/{store}/categories",
  auth: "read",
  response: categoryListResponse,
  params: z.object({ store: storeNameSchema }),
  query: categoryPageSchema.extend({ parent: categoryPathSchema.optional() }).strict(),
  handler: async ({ params, query: { parent, limit, offset } }) => ({
    parent: parent ?? null,
    ...(await stores().listCategoryChildren({ store: params.store, parent: parent ?? null, limit, offset })),
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
