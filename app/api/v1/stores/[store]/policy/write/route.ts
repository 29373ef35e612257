import { setWritePolicyIn, writePolicyIn } from "@/lib/api/proposals";
import { writePolicyResponse, writePolicySetResponse } from "@/lib/api/responses/proposals";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";
import { writePolicyInputSchema } from "@/lib/index/write-policy";

export const GET = defineRoute({
  name: "GET /stores/{store}/policy/write",
  auth: "read",
  description: "The store's write policy: per governed kind (memory, learning, thought, node, relation, frame) `open` (a write counts at once) or `review` (a write by an actor not trusted, or one the poisoning guard flags, lands as a proposal), and the trusted actors.",
  response: writePolicyResponse,
  params: storeParams,
  handler: ({ params }) => writePolicyIn({ store: params.store }),
});

export const PUT = defineRoute({
  name: "PUT /stores/{store}/policy/write",
  auth: "admin",
  description: "Change the store's write policy (admin): the kinds named in `modes` take their mode, `trusted` replaces the list when given (agent ids, token labels, `user:<name>`). Audited and recorded as a ledger override (old → new).",
  response: writePolicySetResponse,
  params: storeParams,
  body: writePolicyInputSchema,
  handler: ({ params, body, principal }) => setWritePolicyIn({ store: params.store, input: body, who: { principal: principal! } }),
});
