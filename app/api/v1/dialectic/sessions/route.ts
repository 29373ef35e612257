import { sessionCreatedResponse, sessionListResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { createSessionSchema, listSessionsQuerySchema } from "@/lib/governance/dialectic";
import { governance } from "@/lib/backend/governance";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { timeCall } from "@/lib/http/request-timer";

export const POST = defineRoute({
  name: "POST /dialectic/sessions",
  auth: "write",
  response: sessionCreatedResponse,
  body: createSessionSchema,
  handler: async ({ body, principal }) => {
    const { session, created } = await timeCall({ route: "dialectic create", fn: () => governance().createDialecticSession({ input: body, agentId: callerOf(principal).agentId }) });
    return respondCreated({ body: { session, created }, created });
  },
});

export const GET = defineRoute({
  name: "GET /dialectic/sessions",
  auth: "read",
  response: sessionListResponse,
  query: listSessionsQuerySchema,
  handler: ({ query, principal }) =>
    timeCall({ route: query.transcript ? "dialectic list+transcript" : "dialectic list", fn: () =>
      governance().listDialecticSessions({ agentId: callerOf(principal).agentId, role: query.role, status: query.status, phase: query.phase, topic: query.topic, includeTranscript: query.transcript, limit: query.limit, offset: query.offset }) }
    ),
});
