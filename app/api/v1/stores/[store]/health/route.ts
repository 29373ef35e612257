import { storeHealthResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreHealthReport } from "@/lib/metrics/health";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/health",
  auth: "read",
  response: storeHealthResponse,
  params: storeParams,
  handler: ({ params }) => getStoreHealthReport({ handle: openStore({ store: params.store }) }),
});
