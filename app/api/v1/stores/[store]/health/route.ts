import { storeHealthResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreHealthReport } from "@/lib/metrics/health";
import { requireStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/health",
  auth: "read",
  response: storeHealthResponse,
  params: storeParams,
  handler: async ({ params }) => {
    requireStore(params.store);
    return getStoreHealthReport({ store: params.store });
  },
});
