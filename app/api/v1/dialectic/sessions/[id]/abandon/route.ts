import { z } from "zod";
import { sessionResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { abandonDialecticSession, abandonSessionSchema } from "@/lib/governance/dialectic";
import { callerOf } from "@/lib/api/respond";
import { clientIdSchema } from "@/lib/common";

export const POST = defineRoute({
  name: "POST /dialectic/sessions/{id}/abandon",
  auth: "write",
  response: sessionResponse,
  params: z.object({ id: clientIdSchema }).strict(),
  body: abandonSessionSchema,
  handler: ({ params, body, principal }) => ({ session: abandonDialecticSession({ sessionId: params.id, ...callerOf(principal), reason: body.reason }) }),
});
