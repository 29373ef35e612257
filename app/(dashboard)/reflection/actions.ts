"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actionError, assertForm, formValues, type ActionResult, type FormValues } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { actorOf } from "@/lib/auth/actor";
import { recallBackend } from "@/lib/recall/backend";
import { reflectionSettingsPatchSchema } from "@/lib/recall/settings";
import { storeNameSchema } from "@/lib/db/store-names";

// Server actions are public endpoints: each checks the session and role itself.
// They write through recallBackend(), as the API does (SQLite or PostgreSQL); the domain functions write the audit rows.

function storeFrom(form: FormData): string {
  return storeNameSchema.parse(form.get("store"));
}

/** A rating changes the precision metric: editors and admins only, never viewers. */
export async function rateRecallHitAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    // Rating is an edit of the store's record: editors and admins (issue 18's editor role).
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const hit = await recallBackend().rateRecallHit({
      store: storeFrom(form),
      input: { hit_id: String(form.get("hit_id") ?? ""), relevant: form.get("relevant") === "true" },
      actor: actorOf(user),
    });
    revalidatePath("/reflection");
    return { ok: true, message: `Rated hit ${hit.id} ${hit.relevant ? "relevant" : "not relevant"}.` };
  } catch (e) {
    return actionError({ error: e });
  }
}

/** A number field as typed; a blank or non-number is NaN, which the settings schema names by field ("must be a number"). */
const numberField = (form: FormData, name: string) => {
  const v = String(form.get(name) ?? "").trim();
  return v === "" ? Number.NaN : Number(v);
};
const optionalCount = z
  .string()
  .trim()
  .transform((s) => (s === "" ? null : Number(s)));

export async function updateReflectionSettingsAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  let values: FormValues | undefined;
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    values = formValues({ form });
    const store = storeFrom(form);
    const patch = reflectionSettingsPatchSchema.parse({
      enabled: form.get("enabled") === "on",
      top_k: numberField(form, "top_k"),
      min_score: numberField(form, "min_score"),
      recency_half_life_days: numberField(form, "recency_half_life_days"),
      failure_warning_score: numberField(form, "failure_warning_score"),
      preference_score: numberField(form, "preference_score"),
      retention: {
        ttl_days: optionalCount.parse(String(form.get("ttl_days") ?? "")),
        max_traces: optionalCount.parse(String(form.get("max_traces") ?? "")),
        strategy: form.get("strategy"),
      },
    });
    await recallBackend().updateReflectionSettings({ store, input: { settings: patch, reason: "edited on the Reflection page" }, actor: actorOf(admin) });
    revalidatePath("/reflection");
    return { ok: true, message: `Reflection settings of ${store} saved.` };
  } catch (e) {
    return actionError({ error: e, values });
  }
}
