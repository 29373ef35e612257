"use client";

import { useActionState } from "react";
import { ConfirmAction } from "@/components/confirm-action";
import type { ActionResult } from "@/lib/http/action-result";
import { CopyButton } from "./copy-button";
import { Field, fieldError, FormStatus, invalidProps, ticked, typed } from "./form-field";

type Action<T> = (prev: ActionResult<T> | null, form: FormData) => Promise<ActionResult<T>>;

// Each form keeps what was typed when the server says no (React resets a form
// after its action; the inputs' defaults are then what the action echoed
// back), and shows each field's message beside the field. Passwords are
// never echoed back: they are typed again.

export function CreateUserForm({ action }: { action: Action<undefined> }) {
  const [state, formAction, pending] = useActionState(action, null);
  const err = (name: string) => fieldError(state, name);
  return (
    <form action={formAction} className="grid gap-2 sm:grid-cols-4" aria-label="Create user">
      <Field id="new-username" label="Username" error={err("username")}>
        <input id="new-username" className="input" name="username" aria-label="New username" defaultValue={typed(state, "username")} required {...invalidProps("new-username", err("username"))} />
      </Field>
      <Field id="new-user-password" label="Password (8+ characters)" error={err("password")}>
        <input id="new-user-password" className="input" name="password" type="password" aria-label="New user password" required {...invalidProps("new-user-password", err("password"))} />
      </Field>
      <Field id="new-user-role" label="Role" error={err("role")}>
        <select id="new-user-role" className="input" name="role" aria-label="Role" defaultValue={typed(state, "role") ?? "viewer"} key={typed(state, "role")}>
          <option value="viewer">viewer (reads everything)</option>
          <option value="editor">editor (also writes memories, annotates, rates)</option>
          <option value="admin">admin (also users, tokens, jobs)</option>
        </select>
      </Field>
      <div className="flex items-end">
        <button className="btn w-full justify-center" disabled={pending}>
          Create user
        </button>
      </div>
      <div className="sm:col-span-4">
        <FormStatus state={state} />
      </div>
    </form>
  );
}

export function ResetPasswordForm({ action, usernames }: { action: Action<undefined>; usernames: string[] }) {
  const [state, formAction, pending] = useActionState(action, null);
  const err = (name: string) => fieldError(state, name);
  return (
    <form action={formAction} className="grid gap-2 sm:grid-cols-4" aria-label="Reset password">
      <Field id="reset-username" label="User" error={err("username")}>
        <select id="reset-username" className="input" name="username" aria-label="User to reset" defaultValue={typed(state, "username")} key={typed(state, "username")}>
          {usernames.map((u) => (
            <option key={u}>{u}</option>
          ))}
        </select>
      </Field>
      <Field id="reset-password" label="New password (8+ characters)" error={err("password")} className="sm:col-span-2">
        <input id="reset-password" className="input" name="password" type="password" aria-label="New password" required {...invalidProps("reset-password", err("password"))} />
      </Field>
      <div className="flex items-end">
        <button className="btn-secondary w-full justify-center" disabled={pending}>
          Reset password
        </button>
      </div>
      <div className="sm:col-span-4">
        <FormStatus state={state} />
      </div>
    </form>
  );
}

export function CreateTokenForm({ action, stores }: { action: Action<{ token: string }>; stores: string[] }) {
  const [state, formAction, pending] = useActionState(action, null);
  const err = (name: string) => fieldError(state, name);
  const scopeError = err("scopes");
  return (
    <form action={formAction} className="space-y-2" aria-label="Create token">
      <div className="grid gap-2 sm:grid-cols-3">
        <Field id="token-label" label="Label" error={err("label")}>
          <input id="token-label" className="input" name="label" placeholder="e.g. claude-laptop" aria-label="Token label" defaultValue={typed(state, "label")} required {...invalidProps("token-label", err("label"))} />
        </Field>
        <Field id="token-agent" label="Agent id" error={err("agent_id")}>
          <input id="token-agent" className="input" name="agent_id" placeholder="e.g. claude" aria-label="Agent id" defaultValue={typed(state, "agent_id")} required {...invalidProps("token-agent", err("agent_id"))} />
        </Field>
        <Field id="token-stores" label={`Stores (blank = all; existing: ${stores.join(", ")})`} error={err("stores")}>
          <input id="token-stores" className="input" name="stores" placeholder="e.g. default, core" aria-label="Allowed stores" defaultValue={typed(state, "stores")} list="token-store-names" {...invalidProps("token-stores", err("stores"))} />
          <datalist id="token-store-names">
            {stores.map((s) => (
              <option key={s} value={s} />
            ))}
          </datalist>
        </Field>
      </div>
      {/* key: after a failed submit the checkboxes re-mount with what was ticked. */}
      <fieldset className="flex flex-wrap items-center gap-x-4 gap-y-2 text-sm" key={state && !state.ok ? JSON.stringify(state.values ?? {}) : "fresh"} {...invalidProps("token-scopes", scopeError)}>
        <legend className="sr-only">Scopes</legend>
        {(["read", "write", "admin"] as const).map((s) => (
          <label key={s} className="flex min-h-10 items-center gap-1 md:min-h-0">
            <input type="checkbox" name="scopes" value={s} defaultChecked={ticked(state, "scopes", s) ?? s === "read"} /> {s}
          </label>
        ))}
        <label className="flex min-h-10 items-center gap-1 md:min-h-0">
          <input type="checkbox" name="allow_new_stores" defaultChecked={ticked(state, "allow_new_stores", "on") ?? false} /> the agent creates new stores
        </label>
        <button className="btn ml-auto" disabled={pending}>
          Create token
        </button>
      </fieldset>
      {scopeError && (
        <p id="token-scopes-error" className="text-xs text-red-700" data-testid="token-scopes-error">
          Scopes: {scopeError}
        </p>
      )}
      <FormStatus state={state} />
      {state?.ok && state.data?.token && (
        <div className="flex flex-wrap items-center gap-2 rounded bg-amber-50 p-2">
          <code className="min-w-0 flex-1 break-all font-mono text-sm" data-testid="new-token">
            {state.data.token}
          </code>
          <CopyButton value={state.data.token} label="Copy token" />
        </div>
      )}
    </form>
  );
}

/** Revoke asks first: an agent using the token is locked out from its next request. */
export function RevokeTokenButton({ action, id, label, agentId, lastUsedAt }: { action: Action<undefined>; id: number; label: string; agentId: string; lastUsedAt: string }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction}>
      <input type="hidden" name="id" value={id} />
      <ConfirmAction
        label="Revoke"
        triggerAriaLabel={`Revoke token ${id}`}
        title={`Revoke token "${label}"?`}
        confirmLabel="Revoke token"
        tone="danger"
        disabled={pending}
        submit={{ name: "confirm", value: "revoke" }}
      >
        Agent {agentId} (last used {lastUsedAt}) gets 401 from its next request with this token. A revoked token cannot be restored: the agent needs a new one.
      </ConfirmAction>
      {state && !state.ok && <p className="text-xs text-red-600">{state.error}</p>}
    </form>
  );
}

/** Disable an active user (asks first: their sessions end at once) or enable a disabled one. */
export function UserStatusButton({ action, username, disabled }: { action: Action<undefined>; username: string; disabled: boolean }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="inline-block pl-2">
      <input type="hidden" name="username" value={username} />
      <input type="hidden" name="disabled" value={disabled ? "false" : "true"} />
      {disabled ? (
        <button className="btn-secondary" disabled={pending} aria-label={`Enable user ${username}`}>
          Enable
        </button>
      ) : (
        <ConfirmAction
          label="Disable"
          triggerAriaLabel={`Disable user ${username}`}
          title={`Disable ${username}?`}
          confirmLabel="Disable user"
          tone="danger"
          disabled={pending}
          submit={{ name: "confirm", value: "disable" }}
        >
          {username} is signed out of every session now and cannot sign in until an admin enables the account again.
        </ConfirmAction>
      )}
      {state && !state.ok && <p className="text-xs text-red-600">{state.error}</p>}
    </form>
  );
}

/** Change a user's role (their sessions end, so the new role applies at their next sign-in). */
export function UserRoleForm({ action, username, role }: { action: Action<undefined>; username: string; role: string }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-1" aria-label={`Role of ${username}`}>
      <input type="hidden" name="username" value={username} />
      <select className="input w-auto" name="role" defaultValue={role} aria-label={`New role for ${username}`} key={role}>
        <option value="viewer">viewer</option>
        <option value="editor">editor</option>
        <option value="admin">admin</option>
      </select>
      <ConfirmAction label="Change" triggerAriaLabel={`Change role of ${username}`} title={`Change the role of ${username}?`} confirmLabel="Change role" disabled={pending} submit={{ name: "confirm", value: "role" }}>
        {username}&apos;s sessions end now; the new role applies from their next sign-in.
      </ConfirmAction>
      {state && <p className={`basis-full text-xs ${state.ok ? "text-emerald-700" : "text-red-600"}`}>{state.ok ? state.message : state.error}</p>}
    </form>
  );
}
