"use client";

import { useActionState } from "react";
import { ConfirmAction } from "@/components/confirm-action";
import type { ActionResult } from "@/lib/http/action-result";

type Action<T> = (prev: ActionResult<T> | null, form: FormData) => Promise<ActionResult<T>>;

function Status<T>({ state }: { state: ActionResult<T> | null }) {
  if (!state) return null;
  if (state.ok) return <p role="status" className="text-sm text-emerald-700">{state.message}</p>;
  return (
    <div role="alert" className="text-sm text-red-600">
      <p>{state.error}</p>
      {state.fields && (
        <ul className="list-disc pl-5">
          {Object.entries(state.fields).map(([k, v]) => (
            <li key={k}>
              {k}: {v}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function CreateUserForm({ action }: { action: Action<undefined> }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="grid gap-2 sm:grid-cols-4" aria-label="Create user">
      <input className="input" name="username" placeholder="username" aria-label="New username" required />
      <input className="input" name="password" type="password" placeholder="password (8+ chars)" aria-label="New user password" required />
      <select className="input" name="role" aria-label="Role" defaultValue="viewer">
        <option value="viewer">viewer</option>
        <option value="editor">editor</option>
        <option value="admin">admin</option>
      </select>
      <button className="btn justify-center" disabled={pending}>
        Create user
      </button>
      <div className="sm:col-span-4">
        <Status state={state} />
      </div>
    </form>
  );
}

export function ResetPasswordForm({ action, usernames }: { action: Action<undefined>; usernames: string[] }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="grid gap-2 sm:grid-cols-4" aria-label="Reset password">
      <select className="input" name="username" aria-label="User to reset">
        {usernames.map((u) => (
          <option key={u}>{u}</option>
        ))}
      </select>
      <input className="input sm:col-span-2" name="password" type="password" placeholder="new password" aria-label="New password" required />
      <button className="btn-secondary justify-center" disabled={pending}>
        Reset password
      </button>
      <div className="sm:col-span-4">
        <Status state={state} />
      </div>
    </form>
  );
}

export function CreateTokenForm({ action }: { action: Action<{ token: string }> }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="space-y-2" aria-label="Create token">
      <div className="grid gap-2 sm:grid-cols-3">
        <input className="input" name="label" placeholder="label, e.g. claude-laptop" aria-label="Token label" required />
        <input className="input" name="agent_id" placeholder="agent id" aria-label="Agent id" required />
        <input className="input" name="stores" placeholder="stores (blank = all)" aria-label="Allowed stores" />
      </div>
      <fieldset className="flex items-center gap-4 text-sm">
        <legend className="sr-only">Scopes</legend>
        {(["read", "write", "admin"] as const).map((s) => (
          <label key={s} className="flex items-center gap-1">
            <input type="checkbox" name="scopes" value={s} defaultChecked={s === "read"} /> {s}
          </label>
        ))}
        <button className="btn ml-auto" disabled={pending}>
          Create token
        </button>
      </fieldset>
      <Status state={state} />
      {state?.ok && state.data?.token && (
        <p className="break-all rounded bg-amber-50 p-2 font-mono text-sm" data-testid="new-token">
          {state.data.token}
        </p>
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

/** Disable an active user (their sessions end) or enable a disabled one. */
export function UserStatusButton({ action, username, disabled }: { action: Action<undefined>; username: string; disabled: boolean }) {
  const [state, formAction, pending] = useActionState(action, null);
  const verb = disabled ? "Enable" : "Disable";
  return (
    <form action={formAction} className="inline-block pl-2">
      <input type="hidden" name="username" value={username} />
      <input type="hidden" name="disabled" value={disabled ? "false" : "true"} />
      <button className="btn-secondary" disabled={pending} aria-label={`${verb} user ${username}`}>
        {verb}
      </button>
      {state && !state.ok && <p className="text-xs text-red-600">{state.error}</p>}
    </form>
  );
}
