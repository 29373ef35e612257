import { dialecticMetricsResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";
import { getDialecticMetrics } from "@/lib/metrics/dialectic";

export const GET = defineRoute({
  name: "GET /dialectic/metrics",
  auth: "read",
  response: dialecticMetricsResponse,
  handler: () => getDialecticMetrics(),
});
