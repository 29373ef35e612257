import { approveProposalSchema, decideProposalIn, proposalParams } from "@/lib/api/proposals";
import { proposalDecisionResponse } from "@/lib/api/responses/proposals";
import { defineRoute } from "@/lib/api/route";

export const POST = defineRoute({
  name: "POST /stores/{store}/proposals/{kind}/{id}/approve",
  auth: "write",
  description: "Approve a proposal: it answers search, recall, remember and lists at once. With `edit` (the kind's own update input) the correction and the approval are one transaction: a refused approval leaves the proposal as proposed. 403 self_review for the proposer's own; 409 not_proposed when it was already decided; 507 while the ledger is full.",
  response: proposalDecisionResponse,
  params: proposalParams,
  body: approveProposalSchema,
  handler: ({ params, body, principal }) => decideProposalIn({ ...params, to: "active", reason: body.reason, edit: body.edit, who: { principal: principal! } }),
});
