import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreHealthReport } from "@/lib/metrics/health";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/health",
  auth: "read",
  params: storeParams,
  handler: ({ params }) => getStoreHealthReport({ handle: openStore({ store: params.store }) }),
});
