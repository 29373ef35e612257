import { itemHistoryRoute } from "@/lib/api/item-routes";

export const GET = itemHistoryRoute;
