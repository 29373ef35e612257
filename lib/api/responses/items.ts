/** Governed memory's item state on the wire (lib/index/item-state.ts). */
import { z } from "zod";
import { ITEM_KINDS } from "../../db/schema/index";
import { epochMs, exact } from "./common";

const status = z.enum(["active", "retired", "proposed", "rejected"]);
const nullableMs = epochMs.nullable();

export const itemState = exact({
  kind: z.enum(ITEM_KINDS),
  id: z.string(),
  status,
  recorded_at: nullableMs,
  retired_at: nullableMs,
  valid_from: nullableMs,
  valid_to: nullableMs,
  supersedes: z.string().nullable(),
  superseded_by: z.string().nullable(),
  reason: z.string().nullable(),
  decided_by: z.string().nullable(),
  updated_at: nullableMs,
});

export const itemTransition = exact({ from: status, to: status, at: epochMs, by: z.string(), reason: z.string(), supersedes: z.string().optional(), superseded_by: z.string().optional() });

/** POST …/invalidate and …/restore: the item's new state, the transition, and the ledger override that records it. */
export const itemDecisionResponse = exact({ state: itemState, transition: itemTransition, override_id: z.string() });

/** GET …/history: the item's state and every transition, oldest first. */
export const itemHistoryResponse = exact({ state: itemState, history: z.array(itemTransition) });

/** GET /stores/{store}/contradictions: each unresolved pair once (lib/index/facts.ts). */
export const contradictionsResponse = exact({
  store: z.string(),
  contradictions: z.array(exact({ kind: z.enum(ITEM_KINDS), id: z.string(), other_id: z.string(), rule: z.literal("same_subject_property"), reason: z.string(), created_at: epochMs })),
});
