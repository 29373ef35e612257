import { z } from "zod";
import { signatureCheckResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const GET = defineRoute({
  name: "GET /dialectic/sessions/{id}/verify",
  auth: "read",
  response: signatureCheckResponse,
  params: z.object({ id: ownedRefSchema }).strict(),
  handler: async ({ params, principal }) => {
    // The session the caller names (its own id first), then checked by its key.
    const { key } = await governance().getDialecticSessionForAgent({ sessionId: params.id, ...callerOf(principal) });
    return governance().verifyDialecticSession({ sessionId: key });
  },
});
