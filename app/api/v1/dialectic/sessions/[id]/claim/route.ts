import { z } from "zod";
import { sessionResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const POST = defineRoute({
  name: "POST /dialectic/sessions/{id}/claim",
  auth: "write",
  response: sessionResponse,
  params: z.object({ id: ownedRefSchema }).strict(),
  handler: async ({ params, principal }) => ({ session: await governance().claimDialecticSession({ sessionId: params.id, ...callerOf(principal) }) }),
});
