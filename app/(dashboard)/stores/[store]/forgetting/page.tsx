import Link from "@/components/link";
import { requireUser } from "@/app/_server/session";
import { ForgetPolicyForm, ForgetRunPanel, ForgottenRestoreForm } from "@/components/forgetting-panel";
import { forgetPolicyIn, forgetRunsIn } from "@/lib/api/forgetting";
import { roleAtLeast } from "@/lib/auth/users";
import { formatTime } from "@/lib/format";
import { FORGET_KINDS } from "@/lib/index/forgetting";
import { itemDecisionAction } from "@/app/(dashboard)/items/actions";
import { forgetRunAction, setForgetPolicyAction } from "./actions";

/**
 * A store's forgetting: its policy per kind (admins edit it), Preview (a dry run) and Forget now (a real run), the
 * past runs, and the items runs retired that are still retired, each with Restore (editors and admins).
 */
export default async function ForgettingPage({ params }: { params: Promise<{ store: string }> }) {
  const user = await requireUser();
  const { store } = await params;
  const [{ policies, protect_tag, limits }, { runs, forgotten }] = await Promise.all([forgetPolicyIn({ store }), forgetRunsIn({ store })]);
  const isAdmin = user.role === "admin";
  const canRestore = roleAtLeast({ role: user.role, min: "editor" });
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Forgetting in store {store}</h1>
      <p className="text-sm text-slate-600">
        <Link className="text-blue-700 underline" href={`/stores/${encodeURIComponent(store)}`}>
          Back to store {store}
        </Link>
        {" · "}A run retires what a kind&apos;s policy matches (kept, restorable; at most {limits.default_per_run} per run). Items tagged &quot;{protect_tag}&quot;, protected ids and items restored after a run are never forgotten.
      </p>
      <section className="card space-y-2" aria-labelledby="forget-policies-heading">
        <h2 id="forget-policies-heading" className="text-lg font-medium">
          Policies
        </h2>
        {policies.length === 0 && <p className="text-sm">No policy: nothing in this store is forgotten.</p>}
        {isAdmin ? (
          FORGET_KINDS.map((kind) => <ForgetPolicyForm key={kind} store={store} kind={kind} policy={policies.find((p) => p.kind === kind)} action={setForgetPolicyAction} />)
        ) : (
          <ul className="list-disc pl-5 text-sm" data-testid="forget-policies">
            {policies.map((p) => (
              <li key={p.kind}>
                {p.kind}: ttl {p.ttl_days ?? "—"}
                {p.ttl_days !== null ? ` days since ${p.ttl_since}` : ""} · keep newest {p.max_items ?? "—"} · never used after {p.unused_days ?? "—"}
                {p.kind === "memory" ? ` · expires_at ${p.honour_expires_at ? "honoured" : "ignored"}` : ""} · {p.protected_ids.length} protected
              </li>
            ))}
          </ul>
        )}
      </section>
      {isAdmin && (
        <section className="card space-y-2" aria-labelledby="forget-run-heading">
          <h2 id="forget-run-heading" className="text-lg font-medium">
            Run
          </h2>
          <ForgetRunPanel store={store} action={forgetRunAction} />
        </section>
      )}
      <section className="card space-y-2" aria-labelledby="forgotten-heading">
        <h2 id="forgotten-heading" className="text-lg font-medium">
          Forgotten items
        </h2>
        {forgotten.length === 0 ? (
          <p className="text-sm">No item is retired by a policy.</p>
        ) : (
          <table className="w-full text-left text-sm" data-testid="forgotten-items">
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col">Item</th>
                <th scope="col">Rule</th>
                <th scope="col">When</th>
                {canRestore && <th scope="col">Restore</th>}
              </tr>
            </thead>
            <tbody>
              {forgotten.map((f) => (
                <tr key={`${f.kind}/${f.id}`}>
                  <td>{f.kind}</td>
                  <td className="font-mono">{f.title}</td>
                  <td title={f.why}>{f.rule}</td>
                  <td>{formatTime(f.at)}</td>
                  {canRestore && (
                    <td>
                      <ForgottenRestoreForm store={store} kind={f.kind} id={f.id} action={itemDecisionAction} />
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section className="card space-y-2" aria-labelledby="forget-runs-heading">
        <h2 id="forget-runs-heading" className="text-lg font-medium">
          Past runs
        </h2>
        {runs.length === 0 ? (
          <p className="text-sm">No run yet.</p>
        ) : (
          <table className="w-full text-left text-sm" data-testid="forget-runs">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Kind of run</th>
                <th scope="col">Items</th>
                <th scope="col">Rules</th>
                <th scope="col">Remaining</th>
                <th scope="col">By</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr key={r.run_id}>
                  <td>{formatTime(r.at)}</td>
                  <td>{r.dry_run ? "preview" : "real"}</td>
                  <td>{r.retired}</td>
                  <td>
                    {Object.entries(r.counts)
                      .map(([k, n]) => `${k} ${n}`)
                      .join(", ") || "—"}
                  </td>
                  <td>{r.remaining}</td>
                  <td>{r.actor}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
