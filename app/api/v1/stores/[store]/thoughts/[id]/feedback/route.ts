import { thoughtResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { openGraphStore, storeItemParams } from "@/lib/graph/store";
import { feedbackInputSchema, recordThoughtFeedback } from "@/lib/graph/thoughts";

export const POST = defineRoute({
  name: "POST /stores/{store}/thoughts/{id}/feedback",
  auth: "write",
  response: thoughtResponse,
  params: storeItemParams,
  body: feedbackInputSchema,
  handler: ({ params, body }) => ({ thought: recordThoughtFeedback({ handle: openGraphStore(params.store), id: params.id, input: body }) }),
});
