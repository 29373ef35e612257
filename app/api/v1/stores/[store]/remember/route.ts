import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { rememberByQuery, rememberInputSchema } from "@/lib/graph/remember";
import { requireStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/remember",
  auth: "read",
  params: storeParams,
  body: rememberInputSchema,
  handler: ({ params, body }) => {
    requireStore(params.store);
    return rememberByQuery({ store: params.store, input: body });
  },
});
