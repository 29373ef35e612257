import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { limitSchema, offsetSchema } from "@/lib/graph/common";
import { listChainsByRecency } from "@/lib/graph/thoughts";
import { openStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/chains",
  auth: "read",
  params: storeParams,
  query: z.object({ limit: limitSchema, offset: offsetSchema }).strict(),
  handler: ({ params, query }) => listChainsByRecency({ handle: openStore({ store: params.store }), limit: query.limit, offset: query.offset }),
});
