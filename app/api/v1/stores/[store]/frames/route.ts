import { frameResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { createFrame, createFrameInputSchema } from "@/lib/graph/frames";
import { actorOf } from "@/lib/auth/actor";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/frames",
  auth: "write",
  response: frameResponse,
  params: storeParams,
  body: createFrameInputSchema,
  status: 201,
  handler: ({ params, body, principal }) => ({ frame: createFrame({ handle: openStore({ store: params.store }), input: body, actor: actorOf(principal) }) }),
});
