import { reflectionOverviewResponse, reflectionSettingsResponse } from "@/lib/api/responses/recall";
import { recallBackend } from "@/lib/recall/backend";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { actorOf } from "@/lib/auth/actor";
import { reflectionSettingsUpdateSchema } from "@/lib/recall/settings";

export const GET = defineRoute({
  name: "GET /stores/{store}/reflection",
  auth: "read",
  response: reflectionOverviewResponse,
  params: storeParams,
  handler: ({ params }) => recallBackend().getReflectionOverview({ store: params.store }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/reflection",
  auth: "admin",
  response: reflectionSettingsResponse,
  params: storeParams,
  body: reflectionSettingsUpdateSchema,
  handler: async ({ params, body, principal }) => ({ settings: await recallBackend().updateReflectionSettings({ store: params.store, input: body, actor: actorOf(principal) }) }),
});
