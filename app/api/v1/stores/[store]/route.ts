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
  params: z.object({ store: storeNameSchema }),
  handler: ({ params, principal }) => stores().deleteStore({ name: params.store, actor: actorOf(principal) }),
});
