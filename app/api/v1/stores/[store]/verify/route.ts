import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { verifyStore } from "@/lib/index/verify";
import { storeNameSchema } from "@/lib/db/store-names";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/verify",
  auth: "read",
  params: z.object({ store: storeNameSchema }),
  handler: ({ params }) => verifyStore({ handle: openStore({ store: params.store }) }),
});
