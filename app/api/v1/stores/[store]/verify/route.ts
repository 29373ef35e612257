import { z } from "zod";
import { verifyResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { verifyStore } from "@/lib/index/verify";
import { storeNameSchema } from "@/lib/db/store-names";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/verify",
  auth: "read",
  response: verifyResponse,
  params: z.object({ store: storeNameSchema }),
  handler: ({ params }) => verifyStore({ handle: openStore({ store: params.store }) }),
});
