import { ActorLink } from "@/components/actor-link";
import { requestTime } from "@/app/_server/pages";
import { formatTime } from "@/lib/format";
import { getConfig } from "@/lib/config";
import Link from "@/components/link";
import { requireAdmin } from "@/app/_server/session";
import { CreateTokenForm, CreateUserForm, ResetPasswordForm, RevokeTokenButton, UserRoleForm, UserStatusButton } from "@/components/admin-forms";
import { governance } from "@/lib/backend/governance";
import { stores as storesBackend } from "@/lib/stores/backend";
import { TimeAgo } from "@/components/time-ago";
import { createTokenAction, createUserAction, resetPasswordAction, revokeTokenAction, setUserDisabledAction, setUserRoleAction } from "./actions";
import { describeReindexAction, getReindexJobAction, startReindexAction } from "./reindex-actions";
import { ReindexSection } from "@/components/reindex-section";
import { AuditTailTable } from "@/components/audit-tail-table";

export default async function AdminPage() {
  const user = await requireAdmin();
  const users = await governance().listUsers({});
  const tokens = await governance().listApiTokens({});
  const audit = await governance().listAuditTail({ limit: 20 });
  const now = requestTime();
  const bootstrapTokenSet = getConfig().bootstrapToken !== undefined;
  // The stores agents use: DATA_DIR's, or PostgreSQL's with DATABASE_URL.
  const stores = await storesBackend().listStoreNames();
  return (
    <div className="space-y-6">
      <h1 className="text-2xl font-semibold">Admin</h1>

      <section className="card space-y-3" aria-labelledby="users-heading">
        <h2 id="users-heading" className="text-lg font-medium">
          Users
        </h2>
        <div className="scroll-x">
        <table tabIndex={0} className="data" data-testid="users-table">
          <thead>
            <tr>
              <th>Username</th>
              <th>Role</th>
              <th>Created</th>
              <th>Status</th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => (
              <tr key={u.id}>
                <td>{u.username}</td>
                <td>{u.id === user.id ? u.role : <UserRoleForm action={setUserRoleAction} username={u.username} role={u.role} />}</td>
                <td>
                  <TimeAgo ms={u.createdAt} now={now} />
                </td>
                <td>
                  {u.disabledAt ? (
                    <>
                      disabled <TimeAgo ms={u.disabledAt} now={now} />
                    </>
                  ) : (
                    "active"
                  )}
                  {/* Nobody disables themselves from here: that would end this very session. */}
                  {u.id !== user.id && <UserStatusButton action={setUserDisabledAction} username={u.username} disabled={!!u.disabledAt} />}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
        <CreateUserForm action={createUserAction} />
        <ResetPasswordForm action={resetPasswordAction} usernames={users.map((u) => u.username)} />
      </section>

      <section className="card space-y-3" aria-labelledby="tokens-heading">
        <h2 id="tokens-heading" className="text-lg font-medium">
          API tokens
        </h2>
        <CreateTokenForm action={createTokenAction} stores={stores} />
        <div className="scroll-x">
        <table tabIndex={0} className="data" data-testid="tokens-table">
          <thead>
            <tr>
              <th>Label</th>
              <th>Agent</th>
              <th>Scopes</th>
              <th>Stores</th>
              <th>Prefix</th>
              <th>Created</th>
              <th>Last used</th>
              <th>Status</th>
            </tr>
          </thead>
          <tbody>
            {bootstrapTokenSet && (
              // Not a ledger row: it lives in the environment, so it is listed for what it can do and how to end it.
              <tr data-testid="bootstrap-token-row">
                <td>DUALMIND_BOOTSTRAP_TOKEN</td>
                <td>
                  <ActorLink agentId="bootstrap" />
                </td>
                <td>read, write, admin</td>
                <td>all</td>
                <td className="font-mono">(environment)</td>
                <td>at start-up</td>
                <td>not tracked</td>
                <td className="text-xs text-slate-700">active while the variable is set: unset it and restart to revoke</td>
              </tr>
            )}
            {tokens.map((t) => (
              <tr key={t.id}>
                <td>{t.label}</td>
                <td>
                  <ActorLink agentId={t.agent_id} />
                </td>
                <td>{t.scopes.join(", ")}</td>
                <td>
                  {t.stores === null
                    ? "all"
                    : t.stores.map((name, i) => (
                        <span key={name}>
                          {i > 0 && ", "}
                          {stores.includes(name) ? <Link href={`/stores/${name}`}>{name}</Link> : `${name} (not created yet)`}
                        </span>
                      ))}
                </td>
                <td className="font-mono">{t.display_prefix}…</td>
                <td>
                  <TimeAgo ms={t.created_at} now={now} />
                </td>
                <td>{t.last_used_at ? <TimeAgo ms={t.last_used_at} now={now} /> : "never"}</td>
                <td>
                  {t.revoked_at ? (
                    <>
                      revoked <TimeAgo ms={t.revoked_at} now={now} />
                    </>
                  ) : (
                    <RevokeTokenButton action={revokeTokenAction} id={t.id} label={t.label} agentId={t.agent_id} lastUsedAt={formatTime(t.last_used_at)} />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      </section>

      <ReindexSection start={startReindexAction} poll={getReindexJobAction} describe={describeReindexAction} />

      <section className="card space-y-3" aria-labelledby="audit-heading">
        <h2 id="audit-heading" className="text-lg font-medium">
          Audit log (latest)
        </h2>
        <AuditTailTable rows={audit} testId="audit-table" />
      </section>
    </div>
  );
}
