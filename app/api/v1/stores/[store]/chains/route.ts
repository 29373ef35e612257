import { z } from "zod";
import { chainListResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { limitSchema, offsetSchema } from "@/lib/common";
import { graphBackend } from "@/lib/graph/backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/chains",
  auth: "read",
  response: chainListResponse,
  params: storeParams,
  query: z.object({ limit: limitSchema, offset: offsetSchema }).strict(),
  handler: ({ params, query }) => graphBackend().listChains({ store: params.store, limit: query.limit, offset: query.offset }),
});
