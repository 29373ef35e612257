import { rememberResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { rememberByQuery, rememberInputSchema } from "@/lib/graph/remember";
import { requireStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/remember",
  auth: "read",
  response: rememberResponse,
  params: storeParams,
  body: rememberInputSchema,
  handler: ({ params, body }) => {
    requireStore(params.store);
    return rememberByQuery({ store: params.store, input: body });
  },
});
