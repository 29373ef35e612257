import { z } from "zod";
import { storeNameSchema } from "../db/store-names";
import { itemDecisionSchema, itemIdSchema, itemKindSchema } from "../index/item-state";
import { itemDecisionResponse, itemHistoryResponse } from "./responses/items";
import { decideItemIn, itemHistoryIn } from "./items";
import { defineRoute } from "./route";

/** Route params of /stores/{store}/items/{kind}/{id}/…: any kind of item, addressed by its own id. */
export const itemParams = z.object({ store: storeNameSchema, kind: itemKindSchema, id: itemIdSchema }).strict();

/** POST …/invalidate and …/restore, declared once. */
export function itemDecisionRoute({ to }: { to: "retired" | "active" }) {
  const verb = to === "retired" ? "invalidate" : "restore";
  return defineRoute({
    name: `POST /stores/{store}/items/{kind}/{id}/${verb}`,
    auth: "write",
    description: to === "retired" ? "Invalidate one item by id: it is retired (kept, with its history) and no longer answers search, recall, remember or lists; 409 item_already_retired when it already is." : "Restore a retired item by id: it answers again at once, unchanged; 409 item_not_retired when it is not retired.",
    response: itemDecisionResponse,
    params: itemParams,
    body: itemDecisionSchema,
    handler: ({ params, body, principal }) => decideItemIn({ ...params, to, reason: body.reason, who: { principal: principal! } }),
  });
}

export const itemHistoryRoute = defineRoute({
  name: "GET /stores/{store}/items/{kind}/{id}/history",
  auth: "read",
  description: "One item's state and each transition (from, to, when, who, why), oldest first.",
  response: itemHistoryResponse,
  params: itemParams,
  handler: ({ params }) => itemHistoryIn(params),
});
