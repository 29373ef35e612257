import { z } from "zod";
import { forgetRunsIn } from "@/lib/api/forgetting";
import { storeParams } from "@/lib/api/params";
import { forgetRunsResponse } from "@/lib/api/responses/forgetting";
import { defineRoute } from "@/lib/api/route";
import { FORGET_LIMITS } from "@/lib/index/forgetting";

export const GET = defineRoute({
  name: "GET /stores/{store}/policy/forget/runs",
  auth: "read",
  response: forgetRunsResponse,
  params: storeParams,
  query: z.object({ limit: z.coerce.number().int().min(1).max(FORGET_LIMITS.maxListed, { message: `limit: at most ${FORGET_LIMITS.maxListed} (maxListed)` }).optional() }).strict(),
  description: "The store's forgetting runs, newest first (who, dry or real, counts per rule, what remained), and the items runs retired that are still retired.",
  handler: ({ params, query }) => forgetRunsIn({ store: params.store, limit: query.limit }),
});
