import { z } from "zod";
import { chainResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeNameSchema } from "@/lib/db/store-names";
import { chainIdSchema } from "@/lib/graph/thoughts";
import { graphBackend } from "@/lib/graph/backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/chains/{id}",
  auth: "read",
  response: chainResponse,
  params: z.object({ store: storeNameSchema, id: chainIdSchema }).strict(),
  handler: async ({ params }) => ({ chain: await graphBackend().getChain({ store: params.store, id: params.id }) }),
});
