"use server";

import { revalidatePath } from "next/cache";
import { actorOf } from "@/lib/auth/actor";
import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import type { VerifyReport } from "@/lib/index/verify";
import { storeNameSchema } from "@/lib/db/store-names";
import { stores } from "@/lib/stores/backend";

/** Read-only: compares the truth (files; on PostgreSQL the memories table) with the index; writes nothing, so it needs no audit row. */
export async function verifyStoreAction(_prev: ActionResult<VerifyReport> | null, form: FormData): Promise<ActionResult<VerifyReport>> {
  try {
    await requireRoleForAction("viewer");
    assertForm(form);
    const report = await stores().verifyStore({ store: storeNameSchema.parse(String(form.get("store") ?? "")) });
    return { ok: true, message: report.ok ? "Index matches the files." : "Differences found.", data: report };
  } catch (e) {
    return actionError({ error: e });
  }
}

/** Admin only (re-checked here: server actions are public endpoints); the domain call writes the audit row. */
export async function deleteStoreAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    const store = storeNameSchema.parse(String(form.get("store") ?? ""));
    // The dialog that named the store was the confirmation.
    await stores().deleteStore({ name: store, actor: actorOf(admin), confirm: store });
    revalidatePath("/stores");
    return { ok: true, message: `Store ${store} was deleted.` };
  } catch (e) {
    return actionError({ error: e });
  }
}

/** Admin only: archive or unarchive (the form's `intent`); the domain call writes the audit row. */
export async function archiveStoreAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    const store = storeNameSchema.parse(String(form.get("store") ?? ""));
    const unarchive = form.get("intent") === "unarchive";
    if (unarchive) await stores().unarchiveStore({ name: store, actor: actorOf(admin) });
    else await stores().archiveStore({ name: store, actor: actorOf(admin) });
    revalidatePath(`/stores/${store}`);
    return { ok: true, message: unarchive ? `Store ${store} is writable again.` : `Store ${store} is archived: read-only.` };
  } catch (e) {
    return actionError({ error: e });
  }
}
