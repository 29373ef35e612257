import { activityPageResponse } from "@/lib/api/responses/activity";
import { defineRoute } from "@/lib/api/route";
import { activityFilterSchema, assertStoreNamedWhenLimited, listActivity } from "@/lib/governance/activity";

export const GET = defineRoute({
  name: "GET /activity",
  description: "The audit log, newest first: filter by agent, actor, action (or a family ending in a dot), store, target and time; page with `before` = next_cursor.",
  auth: "admin",
  query: activityFilterSchema,
  response: activityPageResponse,
  handler: async ({ query, principal }) => {
    assertStoreNamedWhenLimited({ principal, store: query.store });
    return listActivity({ filter: query });
  },
});
