import { overrideRecordedResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { recordOverrideSchema } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { callerOf, respondCreated } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /overrides",
  auth: "write",
  response: overrideRecordedResponse,
  body: recordOverrideSchema,
  handler: async ({ body, principal }) => {
    const caller = callerOf(principal);
    const { override, created } = await governance().recordOverride({ input: body, actor: `agent:${caller.agentId}`, tokenLabel: caller.label, caller });
    return respondCreated({ body: { override, created }, created });
  },
});
