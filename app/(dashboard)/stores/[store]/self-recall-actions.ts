"use server";

import { revalidatePath } from "next/cache";
import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { actorOf } from "@/lib/auth/actor";
import { storeNameSchema } from "@/lib/db/store-names";
import { startEvaluation } from "@/lib/eval/self-recall";

/**
 * The self-recall card's Evaluate button: starts the store's evaluation job
 * (audited by the domain call; answers its running one if there is one).
 * Admin only, re-checked here: server actions are public endpoints.
 */
export async function evaluateStoreAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    const store = storeNameSchema.parse(String(form.get("store") ?? ""));
    const target = form.get("target") === "shadow" ? "shadow" : "active";
    const job = await startEvaluation({ store, actor: actorOf(admin), input: { target } });
    revalidatePath(`/stores/${store}`);
    revalidatePath("/health");
    return { ok: true, message: job.status === "running" ? `Evaluation running (job ${job.id.slice(0, 8)}).` : `Evaluation ${job.status}.` };
  } catch (e) {
    return actionError({ error: e });
  }
}
