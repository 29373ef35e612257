import { z } from "zod";
import { sessionView } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { getDialecticSessionForAgent } from "@/lib/governance/dialectic";
import { callerOf } from "@/lib/api/respond";
import { timeCall } from "@/lib/http/request-timer";
import { clientIdSchema } from "@/lib/common";

export const GET = defineRoute({
  name: "GET /dialectic/sessions/{id}",
  auth: "read",
  response: sessionView,
  params: z.object({ id: clientIdSchema }).strict(),
  handler: ({ params, principal }) => timeCall("dialectic detail", () => getDialecticSessionForAgent({ sessionId: params.id, ...callerOf(principal) })),
});
