import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getEmbeddingStatus } from "@/lib/embed/status";
import { requireStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/health",
  auth: "read",
  params: storeParams,
  handler: async ({ params }) => {
    requireStore(params.store);
    const s = await getEmbeddingStatus(params.store);
    return {
      store: s.store,
      degraded: s.degraded,
      degraded_reason: s.degradedReason,
      backlog: s.backlog,
      drift: s.drift,
      coverage_pct: s.drift?.coveragePct ?? null,
      vector_index: s.vectorIndex,
      configured_model: s.configured,
      active_model: s.active,
      provider_error: s.providerError,
      reembed: s.reembed,
      parked: s.parked,
    };
  },
});
