/** Forgetting by policy on the wire (lib/index/forgetting.ts). */
import { z } from "zod";
import { FORGET_KINDS } from "../../db/schema/index";
import { count, epochMs, exact } from "./common";

const kind = z.enum(FORGET_KINDS);
const rule = z.enum(["expires_at", "ttl", "unused", "cap"]);
const counts = z.record(z.string(), count);

export const kindPolicy = exact({
  kind,
  ttl_days: z.number().nullable(),
  ttl_since: z.enum(["written", "used"]),
  max_items: count.nullable(),
  unused_days: z.number().nullable(),
  honour_expires_at: z.boolean(),
  protected_ids: z.array(z.string()),
  updated_at: epochMs,
  updated_by: z.string(),
});

/** GET/PUT …/policy/forget: every kind's policy the store has (a kind left out is never forgotten), and the tag that protects an item. */
export const forgetPolicyResponse = exact({ store: z.string(), policies: z.array(kindPolicy), protect_tag: z.string(), limits: exact({ max_per_run: count, default_per_run: count }) });

export const forgetCandidate = exact({ kind, id: z.string(), title: z.string(), rule, why: z.string() });

/** POST …/policy/forget/run: what the run retired (dry: would retire), counts per rule, and what remains past its limit. */
export const forgetRunResponse = exact({
  run_id: z.string(),
  dry_run: z.boolean(),
  at: epochMs,
  actor: z.string(),
  limit: count,
  items: z.array(forgetCandidate),
  counts,
  retired: count,
  remaining: count,
  remaining_exact: z.boolean(),
  ids_sha256: z.string(),
  override_id: z.string(),
});

export const forgetRunSummary = exact({ run_id: z.string(), at: epochMs, actor: z.string(), dry_run: z.boolean(), limit: count, counts, retired: count, remaining: count, ids_sha256: z.string() });
export const forgottenItem = exact({ kind, id: z.string(), title: z.string(), rule: z.string(), why: z.string(), run_id: z.string(), at: epochMs });

/** GET …/policy/forget/runs: the store's runs, newest first, and the items runs retired that are still retired. */
export const forgetRunsResponse = exact({ runs: z.array(forgetRunSummary), forgotten: z.array(forgottenItem) });
