import { traceListResponse, traceRecordedResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreDb } from "@/lib/db/connection";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { traceInputSchema } from "@/lib/recall/descriptors";
import { listTraces, listTracesQuerySchema, recordTrace } from "@/lib/recall/traces";
import { requireStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/traces",
  auth: "write",
  response: traceRecordedResponse,
  params: storeParams,
  body: traceInputSchema,
  handler: ({ params, body, principal }) => {
    requireStore(params.store);
    const result = recordTrace({ handle: getStoreDb(params.store), agentId: callerOf(principal).agentId, input: body });
    return respondCreated(result, !result.deduped);
  },
});

export const GET = defineRoute({
  name: "GET /stores/{store}/traces",
  auth: "read",
  response: traceListResponse,
  params: storeParams,
  query: listTracesQuerySchema,
  handler: ({ params, query }) => {
    requireStore(params.store);
    return listTraces({ handle: getStoreDb(params.store), filter: query });
  },
});
