import { traceListResponse, traceRecordedResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { traceInputSchema } from "@/lib/recall/descriptors";
import { listTraces, listTracesQuerySchema, recordTrace } from "@/lib/recall/traces";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/traces",
  auth: "write",
  response: traceRecordedResponse,
  params: storeParams,
  body: traceInputSchema,
  handler: ({ params, body, principal }) => {
    const result = recordTrace({ handle: openStore({ store: params.store }), agentId: callerOf(principal).agentId, input: body });
    return respondCreated(result, !result.deduped);
  },
});

export const GET = defineRoute({
  name: "GET /stores/{store}/traces",
  auth: "read",
  response: traceListResponse,
  params: storeParams,
  query: listTracesQuerySchema,
  handler: ({ params, query }) => listTraces({ handle: openStore({ store: params.store }), filter: query }),
});
