import { defineRoute } from "@/lib/api/route";
import { authorizeMetricsScrape, renderPrometheusMetrics } from "@/lib/metrics/prometheus";

export const dynamic = "force-dynamic";

/** Prometheus scrape endpoint: a read-scope token, or tokenless from loopback on a loopback-bound server. */
export const GET = defineRoute({
  name: "GET /metrics",
  auth: "public",
  handler: async ({ request }) => {
    const { principal } = authorizeMetricsScrape(request);
    const { contentType, body } = await renderPrometheusMetrics({ principal });
    return new Response(body, { headers: { "content-type": contentType } });
  },
});
