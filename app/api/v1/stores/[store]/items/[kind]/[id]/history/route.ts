import { itemParams } from "@/lib/api/item-routes";
import { itemHistoryIn } from "@/lib/api/items";
import { itemHistoryResponse } from "@/lib/api/responses/items";
import { defineRoute } from "@/lib/api/route";

export const GET = defineRoute({
  name: "GET /stores/{store}/items/{kind}/{id}/history",
  auth: "read",
  description: "One item's state and each transition (from, to, when, who, why), oldest first.",
  response: itemHistoryResponse,
  params: itemParams,
  handler: ({ params }) => itemHistoryIn(params),
});
