import { z } from "zod";
import { storeLifecycleResponse } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { stores } from "@/lib/stores/backend";
import { storeNameSchema } from "@/lib/db/store-names";

export const POST = defineRoute({
  name: "POST /stores/{store}/unarchive",
  auth: "admin",
  response: storeLifecycleResponse,
  archivedStores: "allowed",
  params: z.object({ store: storeNameSchema }),
  description: "Make an archived store writable again (admin, audited).",
  handler: ({ params, principal }) => stores().unarchiveStore({ name: params.store, actor: actorOf(principal) }),
});
