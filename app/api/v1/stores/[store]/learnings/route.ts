import { learningCreatedResponse } from "@/lib/api/responses/proposals";
import { learningListResponse } from "@/lib/api/responses/recall";
import { recallBackend } from "@/lib/recall/backend";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { learningInputSchema } from "@/lib/recall/descriptors";
import { listLearningsQuerySchema } from "@/lib/recall/learnings";

export const POST = defineRoute({
  name: "POST /stores/{store}/learnings",
  auth: "write",
  response: learningCreatedResponse,
  params: storeParams,
  body: learningInputSchema,
  handler: async ({ params, body, principal }) => {
    const result = await recallBackend().recordLearning({ store: params.store, agentId: callerOf(principal).agentId, input: body });
    return respondCreated({ body: result, created: !result.deduped });
  },
});

export const GET = defineRoute({
  name: "GET /stores/{store}/learnings",
  auth: "read",
  response: learningListResponse,
  params: storeParams,
  query: listLearningsQuerySchema,
  handler: ({ params, query }) => recallBackend().listLearnings({ store: params.store, filter: query }),
});
