import { rememberResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { rememberByQuery, rememberInputSchema } from "@/lib/graph/remember";
import { openCoreFor, openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/remember",
  auth: "read",
  response: rememberResponse,
  params: storeParams,
  body: rememberInputSchema,
  handler: ({ params, body }) => {
    const handle = openStore({ store: params.store });
    return rememberByQuery({ handle, core: openCoreFor({ handle, includeCore: body.include_core }), input: body });
  },
});
