import { eq } from "drizzle-orm";
import type { z } from "zod";
import { withStoreTx, type PgStoreHandle, type PgStoreTx } from "../db/pg-store";
import { reflectionSettings } from "../db/schema/pg/store";
import { appendAuditPg } from "../governance/audit-pg";
import { applySettingsPatch, inForce, parseStoredSettings, reflectionSettingsUpdateSchema, type ReflectionSettings, type StoredReflectionSettings } from "./settings";

/** Reflection settings on PostgreSQL (the SQLite twin and the rules: ./settings.ts). */
async function readStoredSettingsPg(tx: PgStoreTx, { lock = false } = {}): Promise<StoredReflectionSettings> {
  const q = tx.select({ settings: reflectionSettings.settings }).from(reflectionSettings).where(eq(reflectionSettings.id, 1));
  const [row] = lock ? await q.for("update") : await q;
  return parseStoredSettings(row?.settings);
}

/** The settings in force, read in the caller's transaction. */
export async function getReflectionSettingsPg(tx: PgStoreTx): Promise<ReflectionSettings> {
  return inForce(await readStoredSettingsPg(tx));
}

/** Apply a patch, write it and its audit row in one transaction; returns the settings now in force. */
export async function updateReflectionSettingsPg({ handle, input, actor }: { handle: PgStoreHandle; input: z.input<typeof reflectionSettingsUpdateSchema>; actor: string }): Promise<ReflectionSettings> {
  const { settings: patch, reason } = reflectionSettingsUpdateSchema.parse(input);
  return withStoreTx({ handle }, async (tx) => {
    // Two admins patching at once: the second waits for the first and patches its result (no lost field).
    await tx.insert(reflectionSettings).values({ id: 1, settings: "{}", updatedAt: Date.now(), updatedBy: actor }).onConflictDoNothing();
    const before = await readStoredSettingsPg(tx, { lock: true });
    const next = applySettingsPatch(before, patch);
    await tx.update(reflectionSettings).set({ settings: JSON.stringify(next), updatedAt: Date.now(), updatedBy: actor }).where(eq(reflectionSettings.id, 1));
    await appendAuditPg({ db: tx, entry: { actor, action: "reflection.settings.update", target: `store:${handle.store}`, reason, details: { before, after: next } } });
    return inForce(next);
  });
}
