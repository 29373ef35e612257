"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { decideItemIn } from "@/lib/api/items";
import { itemDecisionSchema, itemIdSchema, itemKindSchema } from "@/lib/index/item-state";
import { storeNameSchema } from "@/lib/db/store-names";

// Server actions are public endpoints: this one re-checks the session and the role on every call.
// It decides through the same function as the API (lib/api/items.ts): the audit entry and the ledger override name the person.

const itemForm = z.object({ store: storeNameSchema, kind: itemKindSchema, id: itemIdSchema, to: z.enum(["retired", "active"]) }).extend(itemDecisionSchema.shape);

/** Invalidate or restore one item with a reason: editors and admins, never viewers. */
export async function itemDecisionAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const f = itemForm.parse({ store: form.get("store"), kind: form.get("kind"), id: form.get("id"), to: form.get("to"), reason: String(form.get("reason") ?? "") });
    const r = await decideItemIn({ store: f.store, kind: f.kind, id: f.id, to: f.to, reason: f.reason, who: { user } });
    revalidatePath("/", "layout");
    return { ok: true, message: `${f.kind} ${f.id} is now ${r.state.status}.` };
  } catch (e) {
    return actionError({ error: e });
  }
}
