"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { getEmbedder } from "@/lib/embed/model";
import { actorOf } from "@/lib/auth/actor";
import { checkSwitchGate } from "@/lib/eval/self-recall";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { formatCount } from "@/lib/format";
import { storeNameSchema } from "@/lib/db/store-names";

const intentSchema = z.enum(["estimate", "start", "start_stale", "start_hold", "switch", "retry_parked"]);

/**
 * The embeddings card's admin buttons. Admin only (re-checked here: server
 * actions are public endpoints); every change is audited by the domain call.
 * The store's backend (SQLite, or PostgreSQL with DATABASE_URL) answers.
 */
export async function embeddingAdminAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    const actor = actorOf(admin);
    const store = storeNameSchema.parse(String(form.get("store") ?? ""));
    const intent = intentSchema.parse(form.get("intent"));
    const backend = embeddingsBackend();
    const configured = await getEmbedder().fingerprint;
    let message: string;
    switch (intent) {
      case "estimate": {
        const e = await backend.estimateReembed({ store, configured, onlyStale: false });
        message = `A full re-embed would embed ${formatCount(e.to_embed)} item(s) with ${configured.provider}:${configured.model}${e.model_changed ? " (a model change)" : ""}.`;
        break;
      }
      case "start":
      case "start_stale":
      case "start_hold": {
        const r = await backend.startReembed({ store, configured, onlyStale: intent === "start_stale", holdSwitch: intent === "start_hold", actor });
        message = r.started
          ? `Re-embed started: ${formatCount(r.job.remaining)} of ${formatCount(r.job.total)} item(s) to embed${r.job.hold_switch ? "; the switch waits for you" : ""}.`
          : `Nothing to re-embed: ${r.reason}. No job was started.`;
        break;
      }
      case "switch": {
        const override = String(form.get("override_reason") ?? "").trim().slice(0, 2000) || undefined;
        const gate = await checkSwitchGate({ store, actor, tokenLabel: "dashboard", override });
        await backend.switchHeldReembed({ store, actor, gate });
        message = `Switched to the new model (self-recall ${gate.verdict}: ${gate.reason}).`;
        break;
      }
      case "retry_parked": {
        const n = await backend.retryParkedEmbeddings({ store, actor });
        message = `${n} parked item(s) queued again.`;
        break;
      }
    }
    revalidatePath(`/stores/${store}`);
    return { ok: true, message };
  } catch (e) {
    return actionError({ error: e });
  }
}

const confirmIntentSchema = z.enum(["start", "start_stale", "start_hold", "switch"]);

/**
 * What a re-embed button would do, in counts, for its confirmation dialog.
 * Reads only; admin only like the buttons themselves.
 */
export async function describeEmbeddingActionAction(store: string, intent: string): Promise<ActionResult<{ text: string }>> {
  try {
    await requireRoleForAction("admin");
    const name = storeNameSchema.parse(store);
    const parsed = confirmIntentSchema.parse(intent);
    const text = await embeddingsBackend().describeReembedIntent({ store: name, configured: await getEmbedder().fingerprint, intent: parsed });
    return { ok: true, message: "counted", data: { text } };
  } catch (e) {
    return actionError({ error: e });
  }
}
