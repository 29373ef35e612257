import { z } from "zod";
import { storeSummary } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { stores } from "@/lib/stores/backend";
import { storeNameSchema } from "@/lib/db/store-names";

export const GET = defineRoute({
  name: "GET /stores/{store}",
  auth: "read",
  response: storeSummary,
  params: z.object({ store: storeNameSchema }),
  handler: ({ params }) => stores().describeStore({ store: params.store }),
});

export const DELETE = defineRoute({
  name: "DELETE /stores/{store}",
  auth: "admin",
  response: z.object({ deleted: storeNameSchema }).strict(),
  archivedStores: "allowed",
  params: z.object({ store: storeNameSchema }),
  // The store's name again: a stray or replayed DELETE without it is refused (422), nothing removed.
  query: z.object({ confirm: z.string().max(63).optional() }).strict(),
  description: "Delete a store and everything in it (admin, audited). `confirm` must repeat the store's name. Its name is taken out of every token allow-list.",
  handler: ({ params, query, principal }) => stores().deleteStore({ name: params.store, actor: actorOf(principal), confirm: query.confirm }),
});
