import { z } from "zod";
import { jobResponse } from "@/lib/api/responses/documents";
import { defineRoute } from "@/lib/api/route";
import { stores } from "@/lib/stores/backend";
import { AppError } from "@/lib/errors";

export const GET = defineRoute({
  name: "GET /jobs/{id}",
  auth: "admin",
  response: jobResponse,
  params: z.object({ id: z.uuid() }),
  handler: async ({ params, principal }) => {
    // A store-limited token sees only its stores' jobs; another store's job answers like an unknown one.
    const job = await stores().getJob({ id: params.id, stores: principal?.stores ?? null });
    if (!job) throw new AppError("not_found", `no job ${params.id}`);
    return { job };
  },
});
