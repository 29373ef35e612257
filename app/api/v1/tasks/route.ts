import { taskCreatedResponse, taskListResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { createTaskSchema, listTasksQuerySchema } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { callerOf, respondCreated } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /tasks",
  auth: "write",
  response: taskCreatedResponse,
  body: createTaskSchema,
  handler: async ({ body, principal }) => {
    const { task, created } = await governance().createTask({ input: body, requestedBy: callerOf(principal).agentId });
    return respondCreated({ body: { task, created }, created });
  },
});

export const GET = defineRoute({
  name: "GET /tasks",
  auth: "read",
  response: taskListResponse,
  query: listTasksQuerySchema,
  // An agent lists the tasks it requested or is assigned to; an unrestricted admin lists every task.
  handler: ({ query, principal }) => governance().listTasks({ input: query, caller: callerOf(principal) }),
});
