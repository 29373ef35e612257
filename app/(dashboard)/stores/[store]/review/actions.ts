"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { AppError } from "@/lib/errors";
import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { decideProposalIn, proposalParams, setWritePolicyIn } from "@/lib/api/proposals";
import { itemReasonSchema } from "@/lib/index/item-state";
import { REVIEW_KINDS, WRITE_MODES, writePolicyInputSchema } from "@/lib/index/write-policy";
import { storeNameSchema } from "@/lib/db/store-names";

// Server actions are public endpoints: each re-checks the session and the role on every call, and decides through the
// same functions as the API (lib/api/proposals.ts): the audit entry and the ledger override name the person.

const decisionForm = proposalParams.extend({ to: z.enum(["active", "rejected"]), reason: itemReasonSchema.optional(), body: z.string().max(1024 * 1024).optional() });

/** Approve (optionally with a corrected memory body) or reject (reason required) one proposal: editors and admins, never viewers. */
export async function proposalDecisionAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const user = await requireRoleForAction("editor");
    assertForm(form);
    const text = (name: string) => {
      const v = form.get(name);
      return typeof v === "string" && v.trim() !== "" ? v : undefined;
    };
    const f = decisionForm.parse({ store: form.get("store"), kind: form.get("kind"), id: form.get("id"), to: form.get("to"), reason: text("reason"), body: text("body") });
    if (f.to === "rejected" && f.reason === undefined) throw new AppError("invalid_request", "reason is required: say why");
    const edit = f.to === "active" && f.body !== undefined ? { body: f.body } : undefined;
    const r = await decideProposalIn({ store: f.store, kind: f.kind, id: f.id, to: f.to, reason: f.reason, edit, who: { user } });
    revalidatePath("/", "layout");
    return { ok: true, message: `${r.kind} ${r.id} is now ${r.status}${r.edited ? " (edited)" : ""}.` };
  } catch (e) {
    return actionError({ error: e });
  }
}

/** Change the store's write policy (a mode per kind, trusted actors one a line): admins only. */
export async function writePolicyAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const user = await requireRoleForAction("admin");
    assertForm(form);
    const store = storeNameSchema.parse(form.get("store"));
    const modes = Object.fromEntries(REVIEW_KINDS.map((k) => [k, z.enum(WRITE_MODES).parse(form.get(`mode_${k}`))]));
    const trusted = String(form.get("trusted") ?? "").split("\n").map((s) => s.trim()).filter(Boolean);
    const input = writePolicyInputSchema.parse({ modes, trusted });
    await setWritePolicyIn({ store, input, who: { user } });
    revalidatePath("/", "layout");
    return { ok: true, message: "Write policy saved." };
  } catch (e) {
    return actionError({ error: e });
  }
}
