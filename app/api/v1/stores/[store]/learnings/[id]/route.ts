import { z } from "zod";
import { learningResponse } from "@/lib/api/responses/recall";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { getStoreDb } from "@/lib/db/connection";
import { getLearningById } from "@/lib/recall/learnings";
import { requireStore } from "@/lib/stores/stores";

export const GET = defineRoute({
  name: "GET /stores/{store}/learnings/{id}",
  auth: "read",
  response: learningResponse,
  params: storeParams.extend({ id: z.coerce.number().int().positive() }).strict(),
  handler: ({ params }) => {
    requireStore(params.store);
    return { learning: getLearningById({ handle: getStoreDb(params.store), id: params.id }) };
  },
});
