import { retryParkedResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { storeParams } from "@/lib/api/params";
import { retryParkedEmbeddings } from "@/lib/embed/queue";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/embeddings/retry-parked",
  auth: "admin",
  response: retryParkedResponse,
  params: storeParams,
  handler: ({ params, principal }) => ({ requeued: retryParkedEmbeddings({ handle: openStore({ store: params.store }), actor: actorOf(principal) }) }),
});
