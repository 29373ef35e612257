import { z } from "zod";
import { chainListResponse } from "@/lib/api/responses/graph";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { openGraphStore } from "@/lib/graph/store";
import { listChainsByRecency } from "@/lib/graph/thoughts";
import { limitSchema, offsetSchema } from "@/lib/common";

export const GET = defineRoute({
  name: "GET /stores/{store}/chains",
  auth: "read",
  response: chainListResponse,
  params: storeParams,
  query: z.object({ limit: limitSchema, offset: offsetSchema }).strict(),
  handler: ({ params, query }) => listChainsByRecency({ handle: openGraphStore(params.store), limit: query.limit, offset: query.offset }),
});
