import { recallResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { callerOf } from "@/lib/api/respond";
import { recallInputSchema, recallReflections } from "@/lib/recall/recall";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/recall",
  auth: "read",
  response: recallResponse,
  params: storeParams,
  body: recallInputSchema,
  handler: ({ params, body, principal }) => recallReflections({ handle: openStore({ store: params.store }), agentId: callerOf(principal).agentId, input: body }),
});
