"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actionError, assertForm, type ActionResult } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { runForgettingIn, setForgetPolicyIn } from "@/lib/api/forgetting";
import { FORGET_KINDS, type KindPolicyInput } from "@/lib/index/forgetting";
import { storeNameSchema } from "@/lib/db/store-names";

// Server actions are public endpoints: each re-checks the session and the role on every call. They act through the
// same functions as the API (lib/api/forgetting.ts): the ledger rows and audit entry name the person.

const optionalNumber = (v: FormDataEntryValue | null) => (v === null || String(v).trim() === "" ? null : Number(v));

/** One kind's forgetting policy from the form (an empty field turns its rule off; "remove" drops the policy): admins only. */
export async function setForgetPolicyAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const user = await requireRoleForAction("admin");
    assertForm(form);
    const store = storeNameSchema.parse(form.get("store"));
    const kind = z.enum(FORGET_KINDS).parse(form.get("kind"));
    const protectedIds = String(form.get("protected_ids") ?? "")
      .split(/[\n,]/)
      .map((s) => s.trim())
      .filter(Boolean);
    const policy: KindPolicyInput | null =
      form.get("remove") === "true"
        ? null
        : {
            ttl_days: optionalNumber(form.get("ttl_days")),
            ttl_since: form.get("ttl_since") === "used" ? "used" : "written",
            max_items: optionalNumber(form.get("max_items")),
            ...(kind === "memory" ? { honour_expires_at: form.get("honour_expires_at") === "on" } : { unused_days: optionalNumber(form.get("unused_days")) }),
            protected_ids: protectedIds,
          };
    await setForgetPolicyIn({ store, input: { policies: { [kind]: policy } }, who: { user } });
    revalidatePath(`/stores/${store}/forgetting`);
    return { ok: true, message: policy === null ? `The ${kind} policy is removed: nothing of that kind is forgotten.` : `The ${kind} policy is saved.` };
  } catch (e) {
    return actionError({ error: e });
  }
}

type Candidate = { kind: string; id: string; title: string; rule: string; why: string };
type RunData = { items: Candidate[]; remaining: number; dry_run: boolean };

const runForm = z.object({ store: storeNameSchema, dry_run: z.enum(["true", "false"]) });

/** Preview (a dry run) or Forget now (a real run, at the API's default limit): admins only. */
export async function forgetRunAction(_prev: ActionResult<RunData> | null, form: FormData): Promise<ActionResult<RunData>> {
  try {
    const user = await requireRoleForAction("admin");
    assertForm(form);
    const f = runForm.parse({ store: form.get("store"), dry_run: form.get("dry_run") });
    const dryRun = f.dry_run === "true";
    const r = await runForgettingIn({ store: f.store, dryRun, who: { user } });
    if (!dryRun) revalidatePath(`/stores/${f.store}/forgetting`);
    const more = r.remaining > 0 ? ` ${r.remaining} more remain past this run's limit of ${r.limit}.` : "";
    const message = dryRun ? `Preview: a run would retire ${r.items.length} item(s).${more}` : `Forgotten: ${r.items.length} item(s) retired (restorable below).${more}`;
    return { ok: true, message, data: { items: r.items, remaining: r.remaining, dry_run: dryRun } };
  } catch (e) {
    return actionError({ error: e });
  }
}
