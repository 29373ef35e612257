import { recallResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { callerOf } from "@/lib/api/respond";
import { recallInputSchema, recallReflections } from "@/lib/recall/recall";
import { requireStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/recall",
  auth: "read",
  response: recallResponse,
  params: storeParams,
  body: recallInputSchema,
  handler: ({ params, body, principal }) => {
    requireStore(params.store);
    return recallReflections({ store: params.store, agentId: callerOf(principal).agentId, input: body });
  },
});
