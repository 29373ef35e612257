import { z } from "zod";
import { dialecticSnapshotResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { clientIdSchema } from "@/lib/common";

export const GET = defineRoute({
  name: "GET /dialectic/sessions/{id}/export",
  auth: "read",
  response: dialecticSnapshotResponse,
  params: z.object({ id: clientIdSchema }).strict(),
  handler: async ({ params, principal }) => {
    await governance().getDialecticSessionForAgent({ sessionId: params.id, ...callerOf(principal) });
    return governance().exportDialecticSessions({ sessionId: params.id });
  },
});
