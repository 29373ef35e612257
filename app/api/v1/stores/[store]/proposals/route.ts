import { listProposalsQuerySchema, proposalsIn } from "@/lib/api/proposals";
import { proposalListResponse } from "@/lib/api/responses/proposals";
import { defineRoute } from "@/lib/api/route";
import { storeParams } from "@/lib/api/params";

export const GET = defineRoute({
  name: "GET /stores/{store}/proposals",
  auth: "read",
  description: "The review queue: writes waiting for review under the store's write policy, newest first, with who proposed them (agent, token label), when, why (untrusted or flagged), their poisoning flags and an excerpt; filter by kind and proposer.",
  response: proposalListResponse,
  params: storeParams,
  query: listProposalsQuerySchema,
  handler: ({ params, query }) => proposalsIn({ store: params.store, ...query }),
});
