import { retryParkedResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreDb } from "@/lib/db/connection";
import { retryParkedEmbeddings } from "@/lib/embed/queue";
import { appendAudit } from "@/lib/governance/audit";
import { requireStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/embeddings/retry-parked",
  auth: "admin",
  response: retryParkedResponse,
  params: storeParams,
  handler: ({ params, principal }) => {
    requireStore(params.store);
    const requeued = retryParkedEmbeddings(getStoreDb(params.store));
    appendAudit({ actor: `agent:${principal?.agentId}`, action: "store.embeddings.retry_parked", target: `store:${params.store}`, details: { requeued } });
    return { requeued };
  },
});
