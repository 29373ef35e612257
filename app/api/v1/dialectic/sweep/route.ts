import { sweepResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { sweepIdleSessionsAudited } from "@/lib/governance/dialectic";
import { callerOf } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /dialectic/sweep",
  auth: "admin",
  response: sweepResponse,
  allStores: true,
  handler: ({ principal }) => sweepIdleSessionsAudited({ actor: `agent:${callerOf(principal).agentId}` }),
});
