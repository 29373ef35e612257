import { eq } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { reflectionSettings } from "../db/schema/recall";
import { appendAudit } from "../governance/audit";

/** Per-store reflection settings; every field has a default so a new store just works. */
export const reflectionSettingsSchema = z
  .object({
    enabled: z.boolean().default(true),
    top_k: z.number().int().min(1).max(50).default(5),
    /** Hits scoring below this (similarity × recency) are not returned. 0.25 from the bench's min_score sweep (builtin provider). */
    min_score: z.number().min(0).max(1).default(0.25),
    /** Age at which a hit's score is halved; 0 turns recency weighting off. */
    recency_half_life_days: z.number().min(0).max(36500).default(90),
    /** Above this embed backlog, success traces are stored without a vector. */
    backlog_watermark: z.number().int().min(1).default(500),
    /** A failure trace scoring at least this raises `past_failure_warning`. */
    failure_warning_score: z.number().min(0).max(1).default(0.35),
    /** Learnings scoring at least this are returned as `aligned_preferences`. */
    preference_score: z.number().min(0).max(1).default(0.3),
    retention: z
      .object({
        /** Traces not seen for this many days are deleted; null keeps them. */
        ttl_days: z.number().int().min(1).nullable().default(null),
        /** At most this many traces are kept; null means no cap. */
        max_traces: z.number().int().min(10).nullable().default(null),
        /** Which traces a cap keeps: the newest, or the newest of every shard/outcome stratum in turn. */
        strategy: z.enum(["newest", "stratified"]).default("stratified"),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type ReflectionSettings = z.output<typeof reflectionSettingsSchema>;

/** A partial update: fields left out keep their current value. */
export const reflectionSettingsPatchSchema = z
  .object({
    enabled: z.boolean(),
    top_k: z.number().int().min(1).max(50),
    min_score: z.number().min(0).max(1),
    recency_half_life_days: z.number().min(0).max(36500),
    backlog_watermark: z.number().int().min(1),
    failure_warning_score: z.number().min(0).max(1),
    preference_score: z.number().min(0).max(1),
    retention: z
      .object({ ttl_days: z.number().int().min(1).nullable(), max_traces: z.number().int().min(10).nullable(), strategy: z.enum(["newest", "stratified"]) })
      .strict()
      .partial(),
  })
  .strict()
  .partial();
export type ReflectionSettingsPatch = z.input<typeof reflectionSettingsPatchSchema>;

/** Body of an admin update: the patch and, optionally, why (kept in the audit row). */
export const reflectionSettingsUpdateSchema = z.object({ settings: reflectionSettingsPatchSchema, reason: z.string().trim().min(1).max(500).optional() }).strict();

export function getReflectionSettings({ handle }: { handle: StoreHandle }): ReflectionSettings {
  const row = handle.db.select({ settings: reflectionSettings.settings }).from(reflectionSettings).where(eq(reflectionSettings.id, 1)).get();
  return reflectionSettingsSchema.parse(row ? JSON.parse(row.settings) : {});
}

/** Apply a patch, write it and its audit row in one transaction; returns the settings now in force. */
export function updateReflectionSettings({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof reflectionSettingsUpdateSchema>; actor: string }): ReflectionSettings {
  const { settings: patch, reason } = reflectionSettingsUpdateSchema.parse(input);
  return handle.sqlite
    .transaction(() => {
      const before = getReflectionSettings({ handle });
      const next = reflectionSettingsSchema.parse({ ...before, ...patch, retention: { ...before.retention, ...patch.retention } });
      const row = { id: 1, settings: JSON.stringify(next), updatedAt: Date.now(), updatedBy: actor };
      handle.db.insert(reflectionSettings).values(row).onConflictDoUpdate({ target: reflectionSettings.id, set: row }).run();
      appendAudit({ actor, action: "reflection.settings.update", target: `store:${handle.store}`, reason, details: { before, after: next } });
      return next;
    })
    .immediate();
}
