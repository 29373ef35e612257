import { storeHealthResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { storeHealthReportFor } from "@/lib/metrics/health";

export const GET = defineRoute({
  name: "GET /stores/{store}/health",
  auth: "read",
  response: storeHealthResponse,
  params: storeParams,
  postgres: "served",
  handler: ({ params }) => storeHealthReportFor({ store: params.store }),
});
