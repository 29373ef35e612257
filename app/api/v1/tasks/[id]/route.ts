import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { clientIdSchema } from "@/lib/governance/common";
import { getTaskStatusById } from "@/lib/governance/ledger";

export const GET = defineRoute({
  name: "GET /tasks/{id}",
  auth: "read",
  params: z.object({ id: clientIdSchema }).strict(),
  handler: ({ params }) => getTaskStatusById({ taskId: params.id }),
});
