import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { describeStore, storeNameSchema } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}",
  auth: "read",
  params: z.object({ store: storeNameSchema }),
  handler: ({ params }) => describeStore(params.store),
});
