import { dialecticSnapshotResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { exportDialecticSessions } from "@/lib/governance/dialectic-export";

export const GET = defineRoute({
  name: "GET /dialectic/export",
  auth: "admin",
  response: dialecticSnapshotResponse,
  allStores: true,
  handler: () => exportDialecticSessions(),
});
