import { relationCreatedOrProposedResponse } from "@/lib/api/responses/proposals";
import { respondCreated } from "@/lib/api/respond";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { createRelationInputSchema } from "@/lib/graph/relations";
import { actorOf } from "@/lib/auth/actor";
import { graphBackend } from "@/lib/graph/backend";

/** 201 for a new relation; 200 with merged: true when it merged into an existing one. */
export const POST = defineRoute({
  name: "POST /stores/{store}/relations",
  auth: "write",
  response: relationCreatedOrProposedResponse,
  params: storeParams,
  body: createRelationInputSchema,
  handler: async ({ params, body, principal }) => {
    const result = await graphBackend().createOrMergeRelation({ store: params.store, input: body, actor: actorOf(principal) });
    return respondCreated({ body: result, created: !result.merged });
  },
});
