import { z } from "zod";
import { verifyResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { stores } from "@/lib/stores/backend";
import { storeNameSchema } from "@/lib/db/store-names";

export const GET = defineRoute({
  name: "GET /stores/{store}/verify",
  auth: "read",
  response: verifyResponse,
  params: z.object({ store: storeNameSchema }),
  handler: ({ params }) => stores().verifyStore({ store: params.store }),
});
