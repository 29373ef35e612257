import { z } from "zod";
import { jobResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { stores } from "@/lib/stores/backend";
import { storeNameSchema } from "@/lib/db/store-names";

export const POST = defineRoute({
  name: "POST /stores/{store}/reindex",
  auth: "admin",
  response: jobResponse,
  params: z.object({ store: storeNameSchema }),
  status: 202,
  handler: async ({ params, principal }) => ({ job: await stores().startReindex({ store: params.store, actor: actorOf(principal) }) }),
});
