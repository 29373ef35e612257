import { z } from "zod";
import { chainResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeNameSchema } from "@/lib/db/store-names";
import { openGraphStore } from "@/lib/graph/store";
import { chainIdSchema, getChainById } from "@/lib/graph/thoughts";

export const GET = defineRoute({
  name: "GET /stores/{store}/chains/{id}",
  auth: "read",
  response: chainResponse,
  params: z.object({ store: storeNameSchema, id: chainIdSchema }).strict(),
  handler: async ({ params }) => ({ chain: await getChainById({ handle: openGraphStore(params.store), id: params.id }) }),
});
