import { recallResponse } from "@/lib/api/responses/recall";
import { recallBackend } from "@/lib/recall/backend";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { callerOf } from "@/lib/api/respond";
import { countedRetrieval } from "@/lib/governance/retrieval-counts";
import { recallInputSchema } from "@/lib/recall/recall";

export const POST = defineRoute({
  name: "POST /stores/{store}/recall",
  auth: "read",
  response: recallResponse,
  params: storeParams,
  body: recallInputSchema,
  handler: ({ params, body, principal }) => countedRetrieval({ kind: "recall", agentId: callerOf(principal).agentId, store: params.store, work: () => recallBackend().recall({ store: params.store, agentId: callerOf(principal).agentId, input: body }) }),
});
