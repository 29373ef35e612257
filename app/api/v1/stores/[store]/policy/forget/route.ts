import { forgetPolicyIn, setForgetPolicyIn } from "@/lib/api/forgetting";
import { storeParams } from "@/lib/api/params";
import { forgetPolicyResponse } from "@/lib/api/responses/forgetting";
import { defineRoute } from "@/lib/api/route";
import { forgetPolicyInputSchema } from "@/lib/index/forgetting";

export const GET = defineRoute({
  name: "GET /stores/{store}/policy/forget",
  auth: "read",
  response: forgetPolicyResponse,
  params: storeParams,
  description: "The store's forgetting policy per kind (memory, learning, trace, thought): ttl, size cap, never-used decay, memories' expires_at, protected ids. A kind without a policy is never forgotten.",
  handler: ({ params }) => forgetPolicyIn({ store: params.store }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/policy/forget",
  auth: "admin",
  response: forgetPolicyResponse,
  params: storeParams,
  body: forgetPolicyInputSchema,
  description: "Set the forgetting policy of the kinds named (null removes a kind's policy; kinds left out are unchanged). Admin; audited and recorded in the ledger.",
  handler: ({ params, body, principal }) => setForgetPolicyIn({ store: params.store, input: body, who: { principal: principal! } }),
});
