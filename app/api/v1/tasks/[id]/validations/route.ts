import { z } from "zod";
import { validationRecordedResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { recordValidationSchema } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const POST = defineRoute({
  name: "POST /tasks/{id}/validations",
  auth: "write",
  response: validationRecordedResponse,
  params: z.object({ id: ownedRefSchema }).strict(),
  body: recordValidationSchema,
  handler: async ({ params, body, principal }) => {
    const { validation, created } = await governance().recordValidation({ taskId: params.id, input: body, caller: callerOf(principal) });
    return respondCreated({ body: { validation, created }, created });
  },
});
