import { storeListResponse, storeSummary } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { assertStoresAllowed, canUseStore } from "@/lib/auth/tokens";
import { stores } from "@/lib/stores/backend";
import { createStoreSchema } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores",
  auth: "read",
  response: storeListResponse,
  handler: async ({ principal }) => ({
    stores: await stores().listStores({ only: (store) => principal !== null && canUseStore({ principal, store }) }),
  }),
});

export const POST = defineRoute({
  name: "POST /stores",
  auth: "write",
  response: storeSummary,
  body: createStoreSchema,
  status: 201,
  handler: ({ body, principal }) => {
    // The new store's `name` is a store reference too, though not a field called `store` (see lib/api/store-refs.ts).
    if (principal) assertStoresAllowed({ principal, stores: [body.name] });
    return stores().createStore({ input: body, actor: actorOf(principal) });
  },
});
