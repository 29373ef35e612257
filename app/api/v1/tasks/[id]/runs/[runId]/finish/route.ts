import { z } from "zod";
import { runFinishedResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { finishRunSchema } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { clientIdSchema } from "@/lib/common";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const POST = defineRoute({
  name: "POST /tasks/{id}/runs/{runId}/finish",
  auth: "write",
  response: runFinishedResponse,
  params: z.object({ id: ownedRefSchema, runId: clientIdSchema }).strict(),
  body: finishRunSchema,
  handler: ({ params, body, principal }) => governance().recordRunFinish({ taskId: params.id, runId: params.runId, input: body, caller: callerOf(principal) }),
});
