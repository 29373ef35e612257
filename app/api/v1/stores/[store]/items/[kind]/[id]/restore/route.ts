import { itemParams } from "@/lib/api/item-routes";
import { decideItemIn } from "@/lib/api/items";
import { itemDecisionResponse } from "@/lib/api/responses/items";
import { defineRoute } from "@/lib/api/route";
import { itemDecisionSchema } from "@/lib/index/item-state";

export const POST = defineRoute({
  name: "POST /stores/{store}/items/{kind}/{id}/restore",
  auth: "write",
  description: "Restore a retired item by id: it answers again at once, unchanged; 409 item_not_retired when it is not retired.",
  response: itemDecisionResponse,
  params: itemParams,
  body: itemDecisionSchema,
  handler: ({ params, body, principal }) => decideItemIn({ ...params, to: "active", reason: body.reason, who: { principal: principal! } }),
});
