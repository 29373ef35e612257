import { overrideRecordedResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { recordOverride, recordOverrideSchema } from "@/lib/governance/ledger";
import { callerOf, respondCreated } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /overrides",
  auth: "write",
  response: overrideRecordedResponse,
  body: recordOverrideSchema,
  handler: ({ body, principal }) => {
    const caller = callerOf(principal);
    const { override, created } = recordOverride({ input: body, actor: `agent:${caller.agentId}`, tokenLabel: caller.label, caller });
    return respondCreated({ override, created }, created);
  },
});
