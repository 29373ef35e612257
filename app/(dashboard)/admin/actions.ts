"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import { actionError, assertForm, formValues, type ActionResult, type FormValues } from "@/lib/http/action-result";
import { requireRoleForAction } from "@/app/_server/session";
import { missingStores } from "@/lib/auth/tokens";
import { stores as storesBackend } from "@/lib/stores/backend";
import { governance } from "@/lib/backend/governance";
import { ROLES, type Role } from "@/lib/auth/users";
import { createUser, setUserPassword } from "@/lib/backend/users";
import { AppError } from "@/lib/errors";

// Every action re-checks the session and the admin role itself: server
// actions are public endpoints. The domain functions write the audit rows.

export async function createUserAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  let values: FormValues | undefined;
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    values = formValues({ form, secret: ["password"] });
    const user = await createUser({
      input: { username: String(form.get("username") ?? ""), password: String(form.get("password") ?? ""), role: form.get("role") as Role },
      actor: `user:${admin.username}`,
    });
    revalidatePath("/admin");
    return { ok: true, message: `Created ${user.role} ${user.username}.` };
  } catch (e) {
    return actionError({ error: e, values });
  }
}

export async function resetPasswordAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  let values: FormValues | undefined;
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    values = formValues({ form, secret: ["password"] });
    const username = String(form.get("username") ?? "");
    await setUserPassword({ username, password: String(form.get("password") ?? ""), actor: `user:${admin.username}` });
    return { ok: true, message: `Password of ${username} changed; their sessions have ended.` };
  } catch (e) {
    return actionError({ error: e, values });
  }
}

const userStatusForm = z.object({ username: z.string().min(1).max(64), disabled: z.enum(["true", "false"]).transform((v) => v === "true") });

/** Disable (sign-in refused, sessions end) or enable a user. An admin cannot disable themselves. */
export async function setUserDisabledAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    const { username, disabled } = userStatusForm.parse({ username: form.get("username"), disabled: form.get("disabled") });
    if (disabled && username === admin.username) throw new AppError("conflict", "you cannot disable your own account");
    const user = await governance().setUserDisabled({ username, disabled, actor: `user:${admin.username}` });
    revalidatePath("/admin");
    return { ok: true, message: user.disabledAt ? `${username} is disabled; their sessions have ended.` : `${username} is enabled.` };
  } catch (e) {
    return actionError({ error: e });
  }
}

const userRoleForm = z.object({ username: z.string().min(1).max(64), role: z.enum(ROLES) });

/** Change a user's role; their sessions end. An admin does not change their own role here (it would end this session). */
export async function setUserRoleAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    const { username, role } = userRoleForm.parse({ username: form.get("username"), role: form.get("role") });
    if (username === admin.username) throw new AppError("conflict", "you cannot change your own role; another admin can");
    await governance().setUserRole({ username, role, actor: `user:${admin.username}` });
    revalidatePath("/admin");
    return { ok: true, message: `${username} is now ${role}; their sessions have ended.` };
  } catch (e) {
    return actionError({ error: e });
  }
}

const storesField = z
  .string()
  .trim()
  .transform((s) => (s === "" ? null : s.split(/[\s,]+/).filter(Boolean)));

/**
 * A store in the list that does not exist is a typo unless the admin says the
 * agent will create it (only write and admin tokens can; the domain refuses
 * it for read-only tokens, API included).
 */
async function assertStoresExistUnlessNew(stores: string[] | null, allowNew: boolean): Promise<void> {
  const missing = missingStores({ stores, existing: await storesBackend().listStoreNames() });
  if (missing.length === 0 || allowNew) return;
  const message = `no such store${missing.length === 1 ? "" : "s"}: ${missing.join(", ")}. Create ${missing.length === 1 ? "it" : "them"} first, or tick "the agent creates new stores".`;
  throw new AppError("unprocessable", message, [{ path: "stores", message }]);
}

export async function createTokenAction(_prev: ActionResult<{ token: string }> | null, form: FormData): Promise<ActionResult<{ token: string }>> {
  let values: FormValues | undefined;
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    values = formValues({ form });
    const stores = storesField.parse(String(form.get("stores") ?? ""));
    await assertStoresExistUnlessNew(stores, form.get("allow_new_stores") === "on");
    const label = String(form.get("label") ?? "");
    const { token, info } = await governance().createApiToken({
      input: {
        label,
        agent_id: String(form.get("agent_id") ?? ""),
        scopes: form.getAll("scopes").map(String) as ("read" | "write" | "admin")[],
        stores,
      },
      actor: `user:${admin.username}`,
    });
    revalidatePath("/admin");
    const renamed = info.label !== label.trim() ? ` (another active token is labelled "${label.trim()}", so this one is "${info.label}")` : "";
    return { ok: true, message: `Token "${info.label}" created for agent ${info.agent_id}${renamed}. Copy it now: it is not shown again.`, data: { token } };
  } catch (e) {
    return actionError({ error: e, values });
  }
}

export async function revokeTokenAction(_prev: ActionResult | null, form: FormData): Promise<ActionResult> {
  try {
    const admin = await requireRoleForAction("admin");
    assertForm(form);
    const id = z.coerce.number().int().positive().parse(form.get("id"));
    const info = await governance().revokeApiToken({ id, actor: `user:${admin.username}`, reason: "revoked from the Admin page" });
    revalidatePath("/admin");
    return { ok: true, message: `Token "${info.label}" revoked.` };
  } catch (e) {
    return actionError({ error: e });
  }
}
