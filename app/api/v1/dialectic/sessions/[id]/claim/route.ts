import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { clientIdSchema } from "@/lib/governance/common";
import { claimDialecticSession } from "@/lib/governance/dialectic";
import { callerOf } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /dialectic/sessions/{id}/claim",
  auth: "write",
  params: z.object({ id: clientIdSchema }).strict(),
  handler: ({ params, principal }) => ({ session: claimDialecticSession({ sessionId: params.id, ...callerOf(principal) }) }),
});
