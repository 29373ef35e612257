import { rememberResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { CORE_STORE } from "@/lib/db/store-names";
import { rememberByQuery, rememberInputSchema } from "@/lib/graph/remember";
import { openStore } from "@/lib/stores/stores";

export const POST = defineRoute({
  name: "POST /stores/{store}/remember",
  auth: "read",
  response: rememberResponse,
  params: storeParams,
  body: rememberInputSchema,
  handler: ({ params, body }) =>
    rememberByQuery({ handle: openStore({ store: params.store }), core: body.include_core ? openStore({ store: CORE_STORE }) : null, input: body }),
});
