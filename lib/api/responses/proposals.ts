/** Governed memory's write policy and review queue on the wire (lib/index/write-policy.ts, lib/index/proposals.ts). */
import { z } from "zod";
import { createdOrExisting } from "../contract";
import { REVIEWABLE_KINDS } from "../../db/schema/index";
import { proposalMarkSchema } from "../../index/proposals";
import { epochMs, exact, flags } from "./common";
import { memoryWithBody } from "./documents";
import { frameResponse, nodeResponse, relationCreatedResponse, thoughtResponse } from "./graph";
import { learningRecordedResponse } from "./recall";
import { itemTransition } from "./items";

const kind = z.enum(REVIEWABLE_KINDS);
const mode = z.enum(["open", "review"]);
const modes = exact(Object.fromEntries(REVIEWABLE_KINDS.map((k) => [k, mode])) as Record<(typeof REVIEWABLE_KINDS)[number], typeof mode>);

/** A create under a store's review policy: `proposal` says the item landed as a proposal (invisible until approved). */
const proposal = { proposal: proposalMarkSchema.optional() };
export const memoryCreatedResponse = memoryWithBody.extend(proposal);
export const learningCreatedResponse = createdOrExisting(learningRecordedResponse.extend(proposal));
export const thoughtCreatedResponse = thoughtResponse.extend(proposal);
export const nodeCreatedResponse = nodeResponse.extend(proposal);
export const relationCreatedOrProposedResponse = createdOrExisting(relationCreatedResponse.extend(proposal));
export const frameCreatedResponse = frameResponse.extend(proposal);

/** GET …/policy/write: the mode of every governed kind and the trusted actors. */
export const writePolicyResponse = exact({ store: z.string(), modes, trusted: z.array(z.string()), updated_at: epochMs.nullable(), updated_by: z.string().nullable() });

/** PUT …/policy/write: the new policy, the old one, and the ledger override that records the change. */
export const writePolicySetResponse = writePolicyResponse.extend({ old: exact({ modes, trusted: z.array(z.string()) }), override_id: z.string() });

export const proposalEntry = exact({
  kind,
  id: z.string(),
  status: z.enum(["active", "retired", "proposed", "rejected"]),
  proposed_by: z.string(),
  token_label: z.string().nullable(),
  proposed_at: epochMs,
  why: z.enum(["untrusted", "flagged"]),
  flags,
  supersedes: z.string().nullable(),
  excerpt: z.string().nullable(),
});

/** GET …/proposals: one page of the review queue, newest first. */
export const proposalListResponse = exact({ total: z.number().int(), proposals: z.array(proposalEntry), next_offset: z.number().int().nullable() });

/** POST …/approve and …/reject: the item's new status, the transition, and the ledger override. */
export const proposalDecisionResponse = exact({ kind, id: z.string(), status: z.enum(["active", "rejected"]), transition: itemTransition, superseded: z.string().nullable(), edited: z.boolean(), override_id: z.string() });
