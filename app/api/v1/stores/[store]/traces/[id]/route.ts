import { z } from "zod";
import { traceResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreDb } from "@/lib/db/connection";
import { getTraceById } from "@/lib/recall/traces";
import { requireStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/traces/{id}",
  auth: "read",
  response: traceResponse,
  params: storeParams.extend({ id: z.coerce.number().int().positive() }).strict(),
  handler: ({ params }) => {
    requireStore(params.store);
    return { trace: getTraceById({ handle: getStoreDb(params.store), id: params.id }) };
  },
});
