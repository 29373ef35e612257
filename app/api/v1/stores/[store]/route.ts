import { z } from "zod";
import { storeSummary } from "@/lib/api/responses/stores";
import { defineRoute } from "@/lib/api/route";
import { describeStore, openStore } from "@/lib/stores/stores";
import { storeNameSchema } from "@/lib/db/store-names";

export const GET = defineRoute({
  name: "GET /stores/{store}",
  auth: "read",
  response: storeSummary,
  params: z.object({ store: storeNameSchema }),
  handler: ({ params }) => describeStore({ handle: openStore({ store: params.store }) }),
});
