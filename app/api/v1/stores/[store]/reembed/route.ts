import { z } from "zod";
import { reembedStartResponse, reembedStatusResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { storeParams } from "@/lib/api/params";
import { getEmbedder } from "@/lib/embed/model";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/reembed",
  auth: "read",
  response: reembedStatusResponse,
  params: storeParams,
  handler: async ({ params }) => ({ job: await embeddingsBackend().getReembedProgress({ store: params.store }) }),
});

export const POST = defineRoute({
  name: "POST /stores/{store}/reembed",
  auth: "admin",
  response: reembedStartResponse,
  params: storeParams,
  body: z.object({ only_stale: z.boolean().default(false), dry_run: z.boolean().default(false), hold_switch: z.boolean().default(false) }).strict(),
  status: 202,
  handler: async ({ params, body, principal }) => {
    const backend = embeddingsBackend();
    const configured = await getEmbedder().fingerprint;
    if (body.dry_run) return { estimate: await backend.estimateReembed({ store: params.store, configured, onlyStale: body.only_stale }) };
    const r = await backend.startReembed({ store: params.store, configured, onlyStale: body.only_stale, holdSwitch: body.hold_switch, actor: actorOf(principal) });
    return r.started ? { job: r.job } : { job: null, nothing_to_reembed: true, message: `nothing to re-embed: ${r.reason}` };
  },
});
