import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { describeStore, openStore } from "@/lib/stores/stores";
import { storeNameSchema } from "@/lib/db/store-names";

export const GET = defineRoute({
  name: "GET /stores/{store}",
  auth: "read",
  params: z.object({ store: storeNameSchema }),
  handler: ({ params }) => describeStore({ handle: openStore({ store: params.store }) }),
});
