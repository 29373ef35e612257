import { z } from "zod";
import { reembedStartResponse, reembedStatusResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreDb } from "@/lib/db/connection";
import { getEmbedder } from "@/lib/embed/model";
import { estimateReembed, getReembedProgress, startReembed } from "@/lib/embed/reembed";
import { requireStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/reembed",
  auth: "read",
  response: reembedStatusResponse,
  params: storeParams,
  handler: ({ params }) => {
    requireStore(params.store);
    return { job: getReembedProgress(getStoreDb(params.store)) };
  },
});

export const POST = defineRoute({
  name: "POST /stores/{store}/reembed",
  auth: "admin",
  response: reembedStartResponse,
  params: storeParams,
  body: z.object({ only_stale: z.boolean().default(false), dry_run: z.boolean().default(false), hold_switch: z.boolean().default(false) }).strict(),
  status: 202,
  handler: async ({ params, body, principal }) => {
    requireStore(params.store);
    const handle = getStoreDb(params.store);
    const configured = await getEmbedder().fingerprint;
    if (body.dry_run) return { estimate: estimateReembed(handle, configured, { onlyStale: body.only_stale }) };
    return { job: startReembed(handle, configured, { onlyStale: body.only_stale, holdSwitch: body.hold_switch, actor: `agent:${principal?.agentId}` }) };
  },
});
