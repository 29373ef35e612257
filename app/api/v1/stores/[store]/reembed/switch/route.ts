import { reembedSwitchResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { storeParams } from "@/lib/api/params";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";

export const POST = defineRoute({
  name: "POST /stores/{store}/reembed/switch",
  auth: "admin",
  response: reembedSwitchResponse,
  params: storeParams,
  handler: async ({ params, principal }) => {
    await embeddingsBackend().switchHeldReembed({ store: params.store, actor: actorOf(principal) });
    return { switched: true };
  },
});
