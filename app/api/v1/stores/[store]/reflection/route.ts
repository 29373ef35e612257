import { reflectionOverviewResponse, reflectionSettingsResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { actorOf } from "@/lib/auth/actor";
import { getReflectionOverview } from "@/lib/recall/overview";
import { reflectionSettingsUpdateSchema, updateReflectionSettings } from "@/lib/recall/settings";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/reflection",
  auth: "read",
  response: reflectionOverviewResponse,
  params: storeParams,
  handler: ({ params }) => getReflectionOverview({ handle: openStore({ store: params.store }) }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/reflection",
  auth: "admin",
  response: reflectionSettingsResponse,
  params: storeParams,
  body: reflectionSettingsUpdateSchema,
  handler: ({ params, body, principal }) => ({ settings: updateReflectionSettings({ handle: openStore({ store: params.store }), input: body, actor: actorOf(principal) }) }),
});
