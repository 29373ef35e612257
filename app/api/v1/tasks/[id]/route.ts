import { z } from "zod";
import { taskStatusResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { getTaskStatusById } from "@/lib/governance/ledger";
import { callerOf } from "@/lib/api/respond";
import { clientIdSchema } from "@/lib/common";

export const GET = defineRoute({
  name: "GET /tasks/{id}",
  auth: "read",
  response: taskStatusResponse,
  params: z.object({ id: clientIdSchema }).strict(),
  handler: ({ params, principal }) => getTaskStatusById({ taskId: params.id, caller: callerOf(principal) }),
});
