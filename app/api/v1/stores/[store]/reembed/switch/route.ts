import { z } from "zod";
import { reembedSwitchResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { storeParams } from "@/lib/api/params";
import { checkSwitchGate } from "@/lib/eval/self-recall";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";

export const POST = defineRoute({
  name: "POST /stores/{store}/reembed/switch",
  auth: "admin",
  response: reembedSwitchResponse,
  params: storeParams,
  // Why to switch although the new model finds the store's own content worse (a ledger override); a query, so a plain POST still switches.
  query: z.object({ override_reason: z.string().trim().min(1).max(2000).optional() }).strict(),
  handler: async ({ params, query, principal }) => {
    const actor = actorOf(principal);
    const gate = await checkSwitchGate({ store: params.store, actor, tokenLabel: principal!.label, override: query.override_reason });
    await embeddingsBackend().switchHeldReembed({ store: params.store, actor, gate });
    return { switched: true, self_recall: gate };
  },
});
