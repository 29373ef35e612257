import { z } from "zod";
import { sessionView } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { timeCall } from "@/lib/http/request-timer";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const GET = defineRoute({
  name: "GET /dialectic/sessions/{id}",
  auth: "read",
  response: sessionView,
  params: z.object({ id: ownedRefSchema }).strict(),
  handler: ({ params, principal }) => timeCall({ route: "dialectic detail", fn: () => governance().getDialecticSessionForAgent({ sessionId: params.id, ...callerOf(principal) }) }),
});
