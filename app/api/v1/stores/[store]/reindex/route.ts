import { z } from "zod";
import { jobResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { startReindexJob } from "@/lib/index/jobs";
import { openIndexedStore } from "@/lib/index/reindex";
import { storeNameSchema } from "@/lib/db/store-names";

export const POST = defineRoute({
  name: "POST /stores/{store}/reindex",
  auth: "admin",
  response: jobResponse,
  params: z.object({ store: storeNameSchema }),
  status: 202,
  handler: ({ params, principal }) => {
    openIndexedStore({ store: params.store });
    return { job: startReindexJob({ store: params.store, actor: `agent:${principal?.agentId}` }) };
  },
});
