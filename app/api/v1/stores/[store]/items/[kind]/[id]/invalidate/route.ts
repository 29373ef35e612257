import { itemParams } from "@/lib/api/item-routes";
import { decideItemIn } from "@/lib/api/items";
import { itemDecisionResponse } from "@/lib/api/responses/items";
import { defineRoute } from "@/lib/api/route";
import { itemDecisionSchema } from "@/lib/index/item-state";

export const POST = defineRoute({
  name: "POST /stores/{store}/items/{kind}/{id}/invalidate",
  auth: "write",
  description: "Invalidate one item by id: it is retired (kept, with its history) and no longer answers search, recall, remember or lists; 409 item_already_retired when it already is.",
  response: itemDecisionResponse,
  params: itemParams,
  body: itemDecisionSchema,
  handler: ({ params, body, principal }) => decideItemIn({ ...params, to: "retired", reason: body.reason, who: { principal: principal! } }),
});
