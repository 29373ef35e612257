import { z } from "zod";
import { validationRecordedResponse } from "@/lib/api/responses/ledger";
import { defineRoute } from "@/lib/api/route";
import { recordValidation, recordValidationSchema } from "@/lib/governance/ledger";
import { callerOf, respondCreated } from "@/lib/api/respond";
import { clientIdSchema } from "@/lib/common";

export const POST = defineRoute({
  name: "POST /tasks/{id}/validations",
  auth: "write",
  response: validationRecordedResponse,
  params: z.object({ id: clientIdSchema }).strict(),
  body: recordValidationSchema,
  handler: ({ params, body, principal }) => {
    const { validation, created } = recordValidation({ taskId: params.id, input: body, caller: callerOf(principal) });
    return respondCreated({ validation, created }, created);
  },
});
