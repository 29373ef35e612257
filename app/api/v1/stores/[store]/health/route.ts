import { storeHealthResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { AppError } from "@/lib/errors";
import { storeParams } from "@/lib/api/params";
import { storeHealthReportFor } from "@/lib/metrics/health";

export const GET = defineRoute({
  name: "GET /stores/{store}/health",
  auth: "read",
  response: storeHealthResponse,
  params: storeParams,
  handler: ({ params, principal }) => {
    if (!principal) throw new AppError("unauthorized", "missing bearer token");
    return storeHealthReportFor({ store: params.store, principal });
  },
});
