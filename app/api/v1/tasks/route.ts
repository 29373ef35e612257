import { defineRoute } from "@/lib/api/route";
import { createTask, createTaskSchema, listTasksByFilter, listTasksQuerySchema } from "@/lib/governance/ledger";
import { callerOf, respondCreated } from "@/lib/governance/respond";

export const POST = defineRoute({
  name: "POST /tasks",
  auth: "write",
  body: createTaskSchema,
  handler: ({ body, principal }) => {
    const { task, created } = createTask({ input: body, requestedBy: callerOf(principal).agentId });
    return respondCreated({ task, created }, created);
  },
});

export const GET = defineRoute({
  name: "GET /tasks",
  auth: "read",
  query: listTasksQuerySchema,
  handler: ({ query }) => listTasksByFilter(query),
});
