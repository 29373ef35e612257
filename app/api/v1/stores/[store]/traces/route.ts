import { traceListResponse, traceRecordedResponse } from "@/lib/api/responses/recall";
import { recallBackend } from "@/lib/recall/backend";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { traceInputSchema } from "@/lib/recall/descriptors";
import { listTracesQuerySchema } from "@/lib/recall/traces";

export const POST = defineRoute({
  name: "POST /stores/{store}/traces",
  auth: "write",
  response: traceRecordedResponse,
  params: storeParams,
  body: traceInputSchema,
  handler: async ({ params, body, principal }) => {
    const result = await recallBackend().recordTrace({ store: params.store, agentId: callerOf(principal).agentId, input: body });
    return respondCreated({ body: result, created: !result.deduped });
  },
});

export const GET = defineRoute({
  name: "GET /stores/{store}/traces",
  auth: "read",
  response: traceListResponse,
  params: storeParams,
  query: listTracesQuerySchema,
  handler: ({ params, query }) => recallBackend().listTraces({ store: params.store, filter: query }),
});
