import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { answerText } from "@/lib/http/answer";
import { authorizeMetricsScrape, renderPrometheusMetrics } from "@/lib/metrics/prometheus";

export const dynamic = "force-dynamic";

/** Prometheus scrape endpoint: a read-scope token; tokenless only when DUALMIND_METRICS_PUBLIC_LOOPBACK=true and the scrape is local (see authorizeMetricsScrape). */
export const GET = defineRoute({
  name: "GET /metrics",
  auth: "public",
  response: z.string(),
  handler: async ({ request }) => {
    const { principal } = await authorizeMetricsScrape(request);
    const { contentType, body } = await renderPrometheusMetrics({ principal });
    return answerText({ body, contentType });
  },
});
