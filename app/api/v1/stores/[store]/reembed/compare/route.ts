import { z } from "zod";
import { modelComparisonResponse } from "@/lib/api/responses/embeddings";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";

export const GET = defineRoute({
  name: "GET /stores/{store}/reembed/compare",
  auth: "admin",
  response: modelComparisonResponse,
  params: storeParams,
  query: z.object({ n: z.coerce.number().int().min(1).max(500).default(50), k: z.coerce.number().int().min(1).max(100).default(10) }).strict(),
  handler: ({ params, query }) => embeddingsBackend().compareCandidateModel({ store: params.store, ...query }),
});
