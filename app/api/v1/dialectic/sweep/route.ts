import { sweepResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /dialectic/sweep",
  auth: "admin",
  response: sweepResponse,
  allStores: true,
  handler: ({ principal }) => governance().sweepIdleSessions({ actor: `agent:${callerOf(principal).agentId}` }),
});
