import { defineRoute } from "@/lib/api/route";
import { exportDialecticSessions } from "@/lib/governance/dialectic-export";

export const GET = defineRoute({
  name: "GET /dialectic/export",
  auth: "admin",
  allStores: true,
  handler: () => exportDialecticSessions(),
});
