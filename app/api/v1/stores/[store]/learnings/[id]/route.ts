import { z } from "zod";
import { recallBackend } from "@/lib/recall/backend";
import { learningResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";

export const GET = defineRoute({
  name: "GET /stores/{store}/learnings/{id}",
  auth: "read",
  response: learningResponse,
  params: storeParams.extend({ id: z.coerce.number().int().positive() }).strict(),
  handler: async ({ params }) => ({ learning: await recallBackend().getLearning({ store: params.store, id: params.id }) }),
});
