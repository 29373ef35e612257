import { z } from "zod";
import { jobResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { startReindexJob } from "@/lib/index/jobs";
import { storeNameSchema } from "@/lib/db/store-names";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/reindex",
  auth: "admin",
  response: jobResponse,
  params: z.object({ store: storeNameSchema }),
  status: 202,
  handler: ({ params, principal }) => ({ job: startReindexJob({ handle: openStore({ store: params.store, buildIndex: false }), actor: actorOf(principal) }) }),
});
