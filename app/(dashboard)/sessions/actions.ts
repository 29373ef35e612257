"use server";

import { revalidatePath } from "next/cache";
import { requireRoleForAction } from "@/app/_server/session";
import { actorOf } from "@/lib/auth/actor";
import { ownedRefSchema } from "@/lib/governance/owned-ids";
import { governance } from "@/lib/backend/governance";
import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";

// Server actions are public endpoints: each checks the session and role itself.
// The domain functions write the audit rows.

const sessionHref = (id: string) => `/sessions/${encodeURIComponent(id)}`;

/** Editors and admins leave a note beside the transcript (not a phase message). */
export async function annotateSessionAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const sessionId = ownedRefSchema.parse(form.get("session_id"));
    await governance().annotateDialecticSession({ sessionId, input: { body: String(form.get("body") ?? "") }, actor: actorOf(user) });
    revalidatePath(sessionHref(sessionId));
    return { ok: true, message: "Note added." };
  } catch (e) {
    return actionError({ error: e });
  }
}

/** Admins end a session without agreement; the page asked them to confirm first. */
export async function abandonSessionAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    const sessionId = ownedRefSchema.parse(form.get("session_id"));
    const reason = String(form.get("reason") ?? "").trim();
    const session = await governance().abandonDialecticSessionAsAdmin({ sessionId, actor: actorOf(admin), reason: reason || undefined });
    revalidatePath(sessionHref(sessionId));
    revalidatePath("/sessions");
    return { ok: true, message: `Session ${session.key} is ${session.status}: ${session.failure_reason ?? ""}` };
  } catch (e) {
    return actionError({ error: e });
  }
}
