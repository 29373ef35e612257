import { z } from "zod";
import { count, epochMs, exact } from "./common";
import { RETRIEVAL_KINDS } from "../../governance/retrieval-counts";

export const activityEntry = exact({
  id: z.number().int(),
  ts: epochMs,
  actor: z.string(),
  action: z.string(),
  target: z.string().nullable(),
  reason: z.string().nullable(),
  /** What the action recorded (JSON as written by the action). */
  details: z.unknown(),
  link: z.string().nullable(),
});
export const activityPageResponse = exact({ entries: z.array(activityEntry), next_cursor: z.number().int().nullable(), complete: z.boolean() });
export const activitySummaryResponse = exact({
  actor: z.string(),
  since: epochMs.nullable(),
  until: epochMs.nullable(),
  total: count,
  writes: count,
  reviews: count,
  retrieval: z.array(exact({ kind: z.enum(RETRIEVAL_KINDS), count, failures: count })),
  failures: count,
  first_ts: epochMs.nullable(),
  last_ts: epochMs.nullable(),
  by_action: z.array(exact({ action: z.string(), count })),
  complete: z.boolean(),
});
