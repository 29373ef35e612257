import { z } from "zod";
import { evaluateStartResponse, selfRecallResponse } from "@/lib/api/responses/self-recall";
import { defineRoute } from "@/lib/api/route";
import { actorOf } from "@/lib/auth/actor";
import { storeParams } from "@/lib/api/params";
import { evaluateInputSchema, getSelfRecall, startEvaluation } from "@/lib/eval/self-recall";

export const GET = defineRoute({
  name: "GET /stores/{store}/evaluate",
  auth: "read",
  response: selfRecallResponse,
  params: storeParams,
  query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(30) }).strict(),
  description: "The store's self-recall: its newest run, the trend of its runs (each with what changed since the one before) and its last evaluation job.",
  handler: async ({ params, query }) => getSelfRecall({ store: params.store, limit: query.limit }),
});

export const POST = defineRoute({
  name: "POST /stores/{store}/evaluate",
  auth: "admin",
  response: evaluateStartResponse,
  params: storeParams,
  body: evaluateInputSchema,
  status: 202,
  description: "Start a self-recall evaluation (an admin job): the store's own probes asked in each mode; poll GET /stores/{store}/evaluate/jobs/{id}.",
  handler: async ({ params, body, principal }) => ({ job: await startEvaluation({ store: params.store, actor: actorOf(principal), input: body }) }),
});
