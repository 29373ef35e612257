import { evaluationJobResponse } from "@/lib/api/responses/self-recall";
import { defineRoute } from "@/lib/api/route";
import { AppError } from "@/lib/errors";
import { getEvaluationJob } from "@/lib/eval/jobs";
import { storeItemParams } from "@/lib/api/params";

export const GET = defineRoute({
  name: "GET /stores/{store}/evaluate/jobs/{id}",
  auth: "read",
  response: evaluationJobResponse,
  params: storeItemParams,
  handler: async ({ params }) => {
    const job = await getEvaluationJob({ id: params.id, store: params.store });
    if (!job) throw new AppError("not_found", `no evaluation job ${params.id} in store ${params.store}`);
    return { job };
  },
});
