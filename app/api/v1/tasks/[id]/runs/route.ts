import { z } from "zod";
import { runRecordedResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { startRunSchema } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const POST = defineRoute({
  name: "POST /tasks/{id}/runs",
  auth: "write",
  response: runRecordedResponse,
  params: z.object({ id: ownedRefSchema }).strict(),
  body: startRunSchema,
  handler: async ({ params, body, principal }) => {
    const { run, created } = await governance().recordRunStart({ taskId: params.id, input: body, caller: callerOf(principal) });
    return respondCreated({ body: { run, created }, created });
  },
});
