import { eq } from "drizzle-orm";
import { z } from "zod";
import type { StoreHandle } from "../db/connection";
import { reflectionSettings } from "../db/schema/recall";
import { appendAudit } from "../governance/audit";
import { getConfig } from "../config";

/** Per-store reflection settings; every field has a default so a new store just works. */
export const reflectionSettingsSchema = z
  .object({
    enabled: z.boolean().default(true),
    top_k: z.number().int().min(1).max(50).default(5),
    /** Hits scoring below this (similarity × recency) are not returned. 0.25 from the bench's min_score sweep (builtin provider). */
    min_score: z.number().min(0).max(1).default(0.25),
    /** Age at which a hit's score is halved; 0 turns recency weighting off. */
    recency_half_life_days: z.number().min(0).max(36500).default(90),
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

/**
 * The settings in force. backlog_watermark is not a per-store setting: it is
 * the one embed backlog watermark (DUALMIND_EMBED_BACKLOG_WATERMARK) that
 * also degrades search and colours Health, shown here read-only.
 */
export type ReflectionSettings = z.output<typeof reflectionSettingsSchema> & { backlog_watermark: number };
export type StoredReflectionSettings = z.output<typeof reflectionSettingsSchema>;

/** A partial update: fields left out keep their current value. */
export const reflectionSettingsPatchSchema = z
  .object({
    enabled: z.boolean(),
    top_k: z.number().int().min(1).max(50),
    min_score: z.number().min(0).max(1),
    recency_half_life_days: z.number().min(0).max(36500),
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

/** Stored settings JSON (or none yet) as settings with every default, on both backends. */
export function parseStoredSettings(json: string | undefined): StoredReflectionSettings {
  // Settings saved before the watermark became one config value may still carry their own: it no longer applies.
  const { backlog_watermark: _ignored, ...stored } = (json ? JSON.parse(json) : {}) as Record<string, unknown>;
  return reflectionSettingsSchema.parse(stored);
}

/** Stored settings with the one backlog watermark in force (see ReflectionSettings). */
export function inForce(stored: StoredReflectionSettings): ReflectionSettings {
  return { ...stored, backlog_watermark: getConfig().embed.backlogWatermark };
}

/** A patch applied to the stored settings (retention merged field by field), validated. */
export function applySettingsPatch(before: StoredReflectionSettings, patch: z.output<typeof reflectionSettingsPatchSchema>): StoredReflectionSettings {
  return reflectionSettingsSchema.parse({ ...before, ...patch, retention: { ...before.retention, ...patch.retention } });
}

function readStoredSettings({ handle }: { handle: StoreHandle }): StoredReflectionSettings {
  const row = handle.db.select({ settings: reflectionSettings.settings }).from(reflectionSettings).where(eq(reflectionSettings.id, 1)).get();
  return parseStoredSettings(row?.settings);
}

export function getReflectionSettings({ handle }: { handle: StoreHandle }): ReflectionSettings {
  return inForce(readStoredSettings({ handle }));
}

/** Apply a patch, write it and its audit row in one transaction; returns the settings now in force. */
export function updateReflectionSettings({ handle, input, actor }: { handle: StoreHandle; input: z.input<typeof reflectionSettingsUpdateSchema>; actor: string }): ReflectionSettings {
  const { settings: patch, reason } = reflectionSettingsUpdateSchema.parse(input);
  return handle.sqlite
    .transaction(() => {
      const before = readStoredSettings({ handle });
      const next = applySettingsPatch(before, patch);
      const row = { id: 1, settings: JSON.stringify(next), updatedAt: Date.now(), updatedBy: actor };
      handle.db.insert(reflectionSettings).values(row).onConflictDoUpdate({ target: reflectionSettings.id, set: row }).run();
      appendAudit({ actor, action: "reflection.settings.update", target: `store:${handle.store}`, reason, details: { before, after: next } });
      return inForce(next);
    })
    .immediate();
}
