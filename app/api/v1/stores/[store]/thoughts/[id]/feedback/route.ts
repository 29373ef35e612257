import { thoughtResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { feedbackInputSchema, recordThoughtFeedback } from "@/lib/graph/thoughts";
import { storeItemParams } from "@/lib/api/params";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/thoughts/{id}/feedback",
  auth: "write",
  response: thoughtResponse,
  params: storeItemParams,
  body: feedbackInputSchema,
  handler: ({ params, body }) => ({ thought: recordThoughtFeedback({ handle: openStore({ store: params.store }), id: params.id, input: body }) }),
});
