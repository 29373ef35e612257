import { z } from "zod";
import { jobResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { AppError } from "@/lib/errors";
import { getJobById } from "@/lib/index/jobs";

export const GET = defineRoute({
  name: "GET /jobs/{id}",
  auth: "admin",
  response: jobResponse,
  // Admin jobs (reindex) run on SQLite stores only, for now.
  postgres: "not_yet",
  params: z.object({ id: z.uuid() }),
  handler: ({ params, principal }) => {
    // A store-limited token sees only its stores' jobs; another store's job answers like an unknown one.
    const job = getJobById({ id: params.id, stores: principal?.stores ?? null });
    if (!job) throw new AppError("not_found", `no job ${params.id}`);
    return { job };
  },
});
