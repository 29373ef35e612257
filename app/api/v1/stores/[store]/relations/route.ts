import { respondCreated } from "@/lib/api/respond";
import { relationCreatedResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { createOrMergeRelation, createRelationInputSchema } from "@/lib/graph/relations";
import { agentActor, openGraphStore } from "@/lib/graph/store";

/** 201 for a new relation; 200 with merged: true when it merged into an existing one. */
export const POST = defineRoute({
  name: "POST /stores/{store}/relations",
  auth: "write",
  response: relationCreatedResponse,
  params: storeParams,
  body: createRelationInputSchema,
  handler: ({ params, body, principal }) => {
    const result = createOrMergeRelation({ handle: openGraphStore(params.store), input: body, actor: agentActor(principal) });
    return respondCreated(result, !result.merged);
  },
});
