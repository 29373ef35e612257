import { z } from "zod";
import { signatureCheckResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { clientIdSchema } from "@/lib/common";

export const GET = defineRoute({
  name: "GET /dialectic/sessions/{id}/verify",
  auth: "read",
  response: signatureCheckResponse,
  params: z.object({ id: clientIdSchema }).strict(),
  handler: async ({ params, principal }) => {
    await governance().getDialecticSessionForAgent({ sessionId: params.id, ...callerOf(principal) });
    return governance().verifyDialecticSession({ sessionId: params.id });
  },
});
