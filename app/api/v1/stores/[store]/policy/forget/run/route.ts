import { runForgettingIn } from "@/lib/api/forgetting";
import { storeParams } from "@/lib/api/params";
import { forgetRunResponse } from "@/lib/api/responses/forgetting";
import { defineRoute } from "@/lib/api/route";
import { forgetRunInputSchema } from "@/lib/index/forgetting";

export const POST = defineRoute({
  name: "POST /stores/{store}/policy/forget/run",
  auth: "admin",
  response: forgetRunResponse,
  params: storeParams,
  body: forgetRunInputSchema,
  description: "Run the store's forgetting policy. dry_run (the default) lists what a real run would retire (kind, id, title, rule, why); dry_run: false retires them (kept, restorable by the items routes), at most `limit` per call (maxPerRun), and answers how many remain. Each run is a ledger row; a real run one audit entry.",
  handler: ({ params, body, principal }) => runForgettingIn({ store: params.store, dryRun: body.dry_run ?? true, limit: body.limit, who: { principal: principal! } }),
});
