import { dialecticSnapshotResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { governance } from "@/lib/backend/governance";

export const GET = defineRoute({
  name: "GET /dialectic/export",
  auth: "admin",
  response: dialecticSnapshotResponse,
  allStores: true,
  handler: () => governance().exportDialecticSessions({}),
});
