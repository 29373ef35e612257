import { z } from "zod";
import { defineRoute } from "@/lib/api/route";
import { AppError } from "@/lib/errors";
import { getJobById } from "@/lib/index/jobs";

export const GET = defineRoute({
  name: "GET /jobs/{id}",
  auth: "admin",
  params: z.object({ id: z.uuid() }),
  handler: ({ params }) => {
    const job = getJobById({ id: params.id });
    if (!job) throw new AppError("not_found", `no job ${params.id}`);
    return { job };
  },
});
