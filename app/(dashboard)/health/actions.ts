"use server";

import { revalidatePath } from "next/cache";
import { actionError, type ActionResult } from "@/app/_server/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { getStoreDb } from "@/lib/db/connection";
import { getEmbedder } from "@/lib/embed/model";
import { retryParkedEmbeddings } from "@/lib/embed/queue";
import { startReembed } from "@/lib/embed/reembed";
import { appendAudit } from "@/lib/governance/audit";
import { requireStore, storeNameSchema } from "@/lib/stores/stores";

/** Admins only; audited with who asked. */
export async function retryParkedAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    const store = storeNameSchema.parse(String(form.get("store") ?? ""));
    requireStore(store);
    const requeued = retryParkedEmbeddings(getStoreDb(store));
    appendAudit({ actor: `user:${admin.username}`, action: "store.embeddings.retry_parked", target: `store:${store}`, details: { requeued } });
    revalidatePath("/health");
    return { ok: true, message: `${requeued} parked items queued again.` };
  } catch (e) {
    return actionError(e);
  }
}

/** Admins only; startReembed writes the audit row. Progress lives in the store, so it survives a reload. */
export async function startReembedAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    const store = storeNameSchema.parse(String(form.get("store") ?? ""));
    requireStore(store);
    const job = startReembed(getStoreDb(store), await getEmbedder().fingerprint, { onlyStale: form.get("only_stale") === "1", actor: `user:${admin.username}` });
    revalidatePath("/health");
    return { ok: true, message: `Re-embed started: ${job.remaining} of ${job.total} to embed.` };
  } catch (e) {
    return actionError(e);
  }
}
