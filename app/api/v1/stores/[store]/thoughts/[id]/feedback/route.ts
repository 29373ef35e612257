import { thoughtResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { feedbackInputSchema } from "@/lib/graph/thoughts";
import { storeItemParams } from "@/lib/api/params";
import { graphBackend } from "@/lib/graph/backend";

export const POST = defineRoute({
  name: "POST /stores/{store}/thoughts/{id}/feedback",
  auth: "write",
  response: thoughtResponse,
  params: storeItemParams,
  body: feedbackInputSchema,
  handler: async ({ params, body }) => ({ thought: await graphBackend().recordThoughtFeedback({ store: params.store, id: params.id, input: body }) }),
});
