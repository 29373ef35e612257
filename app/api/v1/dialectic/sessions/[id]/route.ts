import { z } from "zod";
import { sessionView } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { clientIdSchema } from "@/lib/governance/common";
import { getDialecticSessionForAgent } from "@/lib/governance/dialectic";
import { callerOf } from "@/lib/governance/respond";

export const GET = defineRoute({
  name: "GET /dialectic/sessions/{id}",
  auth: "read",
  response: sessionView,
  params: z.object({ id: clientIdSchema }).strict(),
  handler: ({ params, principal }) => getDialecticSessionForAgent({ sessionId: params.id, ...callerOf(principal) }),
});
