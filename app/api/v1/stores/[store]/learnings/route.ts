import { learningListResponse, learningRecordedResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreDb } from "@/lib/db/connection";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { learningInputSchema } from "@/lib/recall/descriptors";
import { listLearnings, listLearningsQuerySchema, recordLearning } from "@/lib/recall/learnings";
import { requireStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/learnings",
  auth: "write",
  response: learningRecordedResponse,
  params: storeParams,
  body: learningInputSchema,
  handler: ({ params, body, principal }) => {
    requireStore(params.store);
    const result = recordLearning({ handle: getStoreDb(params.store), agentId: callerOf(principal).agentId, input: body });
    return respondCreated(result, !result.deduped);
  },
});

export const GET = defineRoute({
  name: "GET /stores/{store}/learnings",
  auth: "read",
  response: learningListResponse,
  params: storeParams,
  query: listLearningsQuerySchema,
  handler: ({ params, query }) => {
    requireStore(params.store);
    return listLearnings({ handle: getStoreDb(params.store), filter: query });
  },
});
