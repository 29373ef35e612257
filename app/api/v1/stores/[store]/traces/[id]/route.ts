import { z } from "zod";
import { recallBackend } from "@/lib/recall/backend";
import { traceResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";

export const GET = defineRoute({
  name: "GET /stores/{store}/traces/{id}",
  auth: "read",
  response: traceResponse,
  params: storeParams.extend({ id: z.coerce.number().int().positive() }).strict(),
  handler: async ({ params }) => ({ trace: await recallBackend().getTrace({ store: params.store, id: params.id }) }),
});
