import { retryParkedResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { storeParams } from "@/lib/api/params";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";

export const POST = defineRoute({
  name: "POST /stores/{store}/embeddings/retry-parked",
  auth: "admin",
  response: retryParkedResponse,
  params: storeParams,
  handler: async ({ params, principal }) => ({ requeued: await embeddingsBackend().retryParkedEmbeddings({ store: params.store, actor: actorOf(principal) }) }),
});
