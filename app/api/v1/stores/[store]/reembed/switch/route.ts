import { reembedSwitchResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { storeParams } from "@/lib/api/params";
import { switchHeldReembed } from "@/lib/embed/reembed";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/reembed/switch",
  auth: "admin",
  response: reembedSwitchResponse,
  params: storeParams,
  handler: ({ params, principal }) => {
    switchHeldReembed({ handle: openStore({ store: params.store }), actor: actorOf(principal) });
    return { switched: true };
  },
});
