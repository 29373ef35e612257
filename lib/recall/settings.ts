import { eq } from "drizzle-orm";
import { z } from "zod";
import { insertOrIgnore, read, row, update, write, type AnyStoreHandle, type On, type Op, type RowLock } from "../db/port";
import { audit } from "../index/engine-steps";
import { getConfig } from "../config";
import { recallTables } from "./tables";
import { fixedRows } from "./statements";

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

const table = recallTables.settings;

/** The last stored JSON parsed, and what it parsed to: every recall reads the settings, which seldom change. */
let lastParsed: { json: string | undefined; settings: StoredReflectionSettings } | null = null;

function* readStoredSettings({ lock }: { lock?: RowLock } = {}): Op<StoredReflectionSettings> {
  const found = lock ? yield* row(table, (t) => eq(t.id, 1), { lock }) : (yield* fixedRows<{ settings: string }>("select settings from reflection_settings where id = 1"))[0];
  if (lastParsed === null || lastParsed.json !== found?.settings) {
    const parsed = parseStoredSettings(found?.settings);
    // Shared by every read until the JSON changes: frozen, so no caller can change another's.
    lastParsed = { json: found?.settings, settings: Object.freeze({ ...parsed, retention: Object.freeze(parsed.retention) }) };
  }
  return lastParsed.settings;
}

/** The settings in force, as a step of a repository operation. */
export function* reflectionSettingsInForce(): Op<ReflectionSettings> {
  return inForce(yield* readStoredSettings());
}

export function getReflectionSettings<H extends AnyStoreHandle>({ handle }: { handle: H }): On<H, ReflectionSettings> {
  return read(handle, reflectionSettingsInForce());
}

/** Apply a patch, write it and its audit row in one transaction; returns the settings now in force. */
export function updateReflectionSettings<H extends AnyStoreHandle>({ handle, input, actor }: { handle: H; input: z.input<typeof reflectionSettingsUpdateSchema>; actor: string }): On<H, ReflectionSettings> {
  const { settings: patch, reason } = reflectionSettingsUpdateSchema.parse(input);
  return write(handle, function* () {
    // Two admins patching at once: the second waits for the first's row lock and patches its result (no lost field).
    yield* insertOrIgnore(table, { id: 1, settings: "{}", updatedAt: Date.now(), updatedBy: actor }, (t) => [t.id]);
    const before = yield* readStoredSettings({ lock: "update" });
    const next = applySettingsPatch(before, patch);
    yield* update(table, { settings: JSON.stringify(next), updatedAt: Date.now(), updatedBy: actor }, (t) => eq(t.id, 1));
    yield* audit({ actor, action: "reflection.settings.update", target: `store:${handle.store}`, reason, details: { before, after: next } });
    return inForce(next);
  });
}
