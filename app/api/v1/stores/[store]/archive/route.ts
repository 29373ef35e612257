import { z } from "zod";
import { storeLifecycleResponse } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { stores } from "@/lib/stores/backend";
import { storeNameSchema } from "@/lib/db/store-names";

export const POST = defineRoute({
  name: "POST /stores/{store}/archive",
  auth: "admin",
  response: storeLifecycleResponse,
  archivedStores: "allowed",
  params: z.object({ store: storeNameSchema }),
  description: "Archive a store (admin, audited): reads still work, writes answer 409 store_archived, background work leaves it closed.",
  handler: ({ params, principal }) => stores().archiveStore({ name: params.store, actor: actorOf(principal) }),
});
