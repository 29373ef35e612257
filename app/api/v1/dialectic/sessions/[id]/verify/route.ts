import { z } from "zod";
import { signatureCheckResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { getDialecticSessionForAgent, verifyDialecticSession } from "@/lib/governance/dialectic";
import { callerOf } from "@/lib/api/respond";
import { clientIdSchema } from "@/lib/common";

export const GET = defineRoute({
  name: "GET /dialectic/sessions/{id}/verify",
  auth: "read",
  response: signatureCheckResponse,
  params: z.object({ id: clientIdSchema }).strict(),
  handler: ({ params, principal }) => {
    getDialecticSessionForAgent({ sessionId: params.id, ...callerOf(principal) });
    return verifyDialecticSession({ sessionId: params.id });
  },
});
