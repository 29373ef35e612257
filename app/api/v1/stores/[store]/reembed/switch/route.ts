import { reembedSwitchResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreDb } from "@/lib/db/connection";
import { switchHeldReembed } from "@/lib/embed/reembed";
import { requireStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/reembed/switch",
  auth: "admin",
  response: reembedSwitchResponse,
  params: storeParams,
  handler: ({ params, principal }) => {
    requireStore(params.store);
    switchHeldReembed(getStoreDb(params.store), { actor: `agent:${principal?.agentId}` });
    return { switched: true };
  },
});
