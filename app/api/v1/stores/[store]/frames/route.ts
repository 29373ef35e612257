import { frameResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { createFrame, createFrameInputSchema } from "@/lib/graph/frames";
import { agentActor, openGraphStore } from "@/lib/graph/store";

export const POST = defineRoute({
  name: "POST /stores/{store}/frames",
  auth: "write",
  response: frameResponse,
  params: storeParams,
  body: createFrameInputSchema,
  status: 201,
  handler: ({ params, body, principal }) => ({ frame: createFrame({ handle: openGraphStore(params.store), input: body, actor: agentActor(principal) }) }),
});
