import { z } from "zod";
import { sessionResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { abandonSessionSchema } from "@/lib/governance/dialectic";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const POST = defineRoute({
  name: "POST /dialectic/sessions/{id}/abandon",
  auth: "write",
  response: sessionResponse,
  params: z.object({ id: ownedRefSchema }).strict(),
  body: abandonSessionSchema,
  handler: async ({ params, body, principal }) => ({ session: await governance().abandonDialecticSession({ sessionId: params.id, ...callerOf(principal), reason: body.reason }) }),
});
