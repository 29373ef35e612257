import { decideProposalIn, proposalParams, rejectProposalSchema } from "@/lib/api/proposals";
import { proposalDecisionResponse } from "@/lib/api/responses/proposals";
import { defineRoute } from "@/lib/api/route";

export const POST = defineRoute({
  name: "POST /stores/{store}/proposals/{kind}/{id}/reject",
  auth: "write",
  description: "Reject a proposal (reason required): it stays stored, with its history, and answers nothing; restoring it re-opens it as a proposal. 403 self_review for the proposer's own.",
  response: proposalDecisionResponse,
  params: proposalParams,
  body: rejectProposalSchema,
  handler: ({ params, body, principal }) => decideProposalIn({ ...params, to: "rejected", reason: body.reason, who: { principal: principal! } }),
});
