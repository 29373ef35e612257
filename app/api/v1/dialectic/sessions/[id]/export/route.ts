import { z } from "zod";
import { dialecticSnapshotResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { callerOf } from "@/lib/api/respond";
import { ownedRefSchema } from "@/lib/governance/owned-ids";

export const GET = defineRoute({
  name: "GET /dialectic/sessions/{id}/export",
  auth: "read",
  response: dialecticSnapshotResponse,
  params: z.object({ id: ownedRefSchema }).strict(),
  handler: async ({ params, principal }) => {
    // The session the caller names (its own id first), then exported by its key.
    const { key } = await governance().getDialecticSessionForAgent({ sessionId: params.id, ...callerOf(principal) });
    return governance().exportDialecticSessions({ sessionId: key });
  },
});
