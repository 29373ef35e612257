import { openProposalDialecticIn, proposalParams } from "@/lib/api/proposals";
import { respondCreated } from "@/lib/api/respond";
import { sessionCreatedResponse } from "@/lib/api/responses/dialectic";
import { defineRoute } from "@/lib/api/route";

export const POST = defineRoute({
  name: "POST /stores/{store}/proposals/{kind}/{id}/dialectic",
  auth: "write",
  description: "Open a dialectic session on a proposal (the caller is its requestor): the session's topic names the item, so its review can be argued before it is approved or rejected.",
  response: sessionCreatedResponse,
  params: proposalParams,
  handler: async ({ params, principal }) => {
    const { session, created } = await openProposalDialecticIn({ ...params, principal: principal! });
    return respondCreated({ body: { session, created }, created });
  },
});
