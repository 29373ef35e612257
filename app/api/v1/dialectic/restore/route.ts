import { restoreResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";
import { dialecticSnapshotSchema } from "@/lib/governance/dialectic-export";
import { callerOf } from "@/lib/api/respond";

export const POST = defineRoute({
  name: "POST /dialectic/restore",
  auth: "admin",
  response: restoreResponse,
  allStores: true,
  body: dialecticSnapshotSchema,
  // A full snapshot is larger than an ordinary request.
  maxBodyBytes: 64 * 1024 * 1024,
  handler: ({ body, principal }) => governance().restoreDialecticSessions({ snapshot: body, actor: `agent:${callerOf(principal).agentId}` }),
});
