import { z } from "zod";
import { chainListResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { listChainsByRecency } from "@/lib/graph/thoughts";
import { limitSchema, offsetSchema } from "@/lib/common";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/chains",
  auth: "read",
  response: chainListResponse,
  params: storeParams,
  query: z.object({ limit: limitSchema, offset: offsetSchema }).strict(),
  handler: ({ params, query }) => listChainsByRecency({ handle: openStore({ store: params.store }), limit: query.limit, offset: query.offset }),
});
