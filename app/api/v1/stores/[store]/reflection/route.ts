import { reflectionOverviewResponse, reflectionSettingsResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreDb } from "@/lib/db/connection";
import { callerOf } from "@/lib/api/respond";
import { getReflectionOverview } from "@/lib/recall/overview";
import { reflectionSettingsUpdateSchema, updateReflectionSettings } from "@/lib/recall/settings";
import { requireStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/reflection",
  auth: "read",
  response: reflectionOverviewResponse,
  params: storeParams,
  handler: ({ params }) => {
    requireStore(params.store);
    return getReflectionOverview({ handle: getStoreDb(params.store) });
  },
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/reflection",
  auth: "admin",
  response: reflectionSettingsResponse,
  params: storeParams,
  body: reflectionSettingsUpdateSchema,
  handler: ({ params, body, principal }) => {
    requireStore(params.store);
    const settings = updateReflectionSettings({ handle: getStoreDb(params.store), patch: body.settings, reason: body.reason, actor: `agent:${callerOf(principal).agentId}` });
    return { settings };
  },
});
