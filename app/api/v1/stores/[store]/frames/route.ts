import { wrappedWithProposal } from "@/lib/index/proposals";
import { frameCreatedResponse } from "@/lib/api/responses/proposals";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { createFrameInputSchema } from "@/lib/graph/frames";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

export const POST = defineRoute({
  name: "POST /stores/{store}/frames",
  auth: "write",
  response: frameCreatedResponse,
  params: storeParams,
  body: createFrameInputSchema,
  status: 201,
  handler: async ({ params, body, principal }) => wrappedWithProposal({ key: "frame", item: await graphBackend().createFrame({ store: params.store, input: body, actor: actorOf(principal) }) }),
});
