import { z } from "zod";
import { messagePostedResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { postMessageSchema } from "@/lib/governance/dialectic";
import { governance } from "@/lib/backend/governance";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const POST = defineRoute({
  name: "POST /dialectic/sessions/{id}/messages",
  auth: "write",
  response: messagePostedResponse,
  params: z.object({ id: ownedRefSchema }).strict(),
  body: postMessageSchema,
  handler: async ({ params, body, principal }) => {
    const result = await governance().postDialecticMessage({ sessionId: params.id, ...callerOf(principal), input: body });
    return respondCreated({ body: result, created: result.created });
  },
});
