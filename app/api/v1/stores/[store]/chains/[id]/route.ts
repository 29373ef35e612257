import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { storeNameSchema } from "@/lib/db/store-names";
import { chainIdSchema, getChainById } from "@/lib/graph/thoughts";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/chains/{id}",
  auth: "read",
  params: z.object({ store: storeNameSchema, id: chainIdSchema }).strict(),
  handler: async ({ params }) => ({ chain: await getChainById({ handle: openStore({ store: params.store }), id: params.id }) }),
});
