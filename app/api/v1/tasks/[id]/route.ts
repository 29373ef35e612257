import { z } from "zod";
import { taskStatusResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const GET = defineRoute({
  name: "GET /tasks/{id}",
  auth: "read",
  response: taskStatusResponse,
  params: z.object({ id: ownedRefSchema }).strict(),
  handler: ({ params, principal }) => governance().getTaskStatus({ taskId: params.id, caller: callerOf(principal) }),
});
