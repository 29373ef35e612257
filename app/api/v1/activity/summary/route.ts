import { activitySummaryResponse } from "@/lib/api/responses/activity";
import { defineRoute } from "@/lib/api/route";
import { activitySummarySchema, assertStoreNamedWhenLimited, summarizeActivity } from "@/lib/governance/activity";

export const GET = defineRoute({
  name: "GET /activity/summary",
  description: "What one agent (or actor) did over a time range: writes and reviews (validations posted) from the audit log, searches, recalls and remembers with their failures from the hourly retrieval counts, and audited actions counted per action.",
  auth: "admin",
  query: activitySummarySchema,
  response: activitySummaryResponse,
  handler: async ({ query, principal }) => {
    assertStoreNamedWhenLimited({ principal, store: query.store });
    return summarizeActivity({ filter: query });
  },
});
