import { rememberResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { graphBackend } from "@/lib/graph/backend";
import { rememberInputSchema } from "@/lib/graph/remember";
import { callerOf } from "@/lib/api/respond";
import { countedRetrieval } from "@/lib/governance/retrieval-counts";

// Core is read too when the body asks for it (the wrapper checked the token may read core).
export const POST = defineRoute({
  name: "POST /stores/{store}/remember",
  auth: "read",
  response: rememberResponse,
  params: storeParams,
  body: rememberInputSchema,
  handler: ({ params, body, principal }) => countedRetrieval({ kind: "remember", agentId: callerOf(principal).agentId, store: params.store, work: () => graphBackend().remember({ store: params.store, input: body }) }),
});
