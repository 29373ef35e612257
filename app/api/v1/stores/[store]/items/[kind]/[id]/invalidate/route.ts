import { itemDecisionRoute } from "@/lib/api/item-routes";

export const POST = itemDecisionRoute({ to: "retired" });
