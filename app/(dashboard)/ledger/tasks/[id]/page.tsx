import { LedgerSection } from "@/components/ledger-section";
import Link from "@/components/link";
import { notFound } from "next/navigation";
import { LedgerHash } from "@/components/ledger-hash";
import { LedgerRunTimeline } from "@/components/ledger-run-timeline";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { formatTime } from "@/lib/format";
import type { TaskStatus } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { requireUser } from "@/app/_server/session";
import { findByClientId } from "@/app/_server/pages";
import { OwnedIdChoices } from "@/components/owned-id-choices";

type Props = { params: Promise<{ id: string }> };

export default async function TaskPage({ params }: Props) {
  await requireUser();
  // Next hands params already decoded: decoding again broke on an id holding `%`.
  const id = (await params).id;
  const lookup = await findByClientId<TaskStatus>({ id, load: (taskId) => governance().getTaskStatus({ taskId }), choices: (clientId) => governance().listTasksByClientId({ clientId }) });
  if (!lookup) notFound();
  if ("choices" in lookup) return <OwnedIdChoices kind="task" id={id} basePath="/ledger/tasks" backHref="/ledger" backLabel="Ledger" choices={lookup.choices} />;
  const { task, runs, validations, overrides, artifacts, verdict, omitted } = lookup.found;
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href="/ledger" className="text-sm underline">
          ← Ledger
        </Link>
        <h1 className="text-2xl font-semibold">{task.intent}</h1>
        <p className="text-sm text-slate-600">
          task <span className="font-mono">{task.task_id}</span> · requested by {task.requested_by} · {formatTime(task.created_at)}
        </p>
      </div>

      <LedgerSection id="verdict-heading" title={<>Verdict <LedgerVerdictBadge value={verdict.verdict} testId="task-verdict" /></>}>
        <p className="text-sm text-slate-600">Requires: {task.required_checks.join(" and ")} checks in the latest validation, with every run finished.</p>
        <ul className="list-disc pl-5 text-sm">
          {verdict.reasons.map((r) => (
            <li key={r}>{r}</li>
          ))}
        </ul>
        {overrides.length > 0 && (
          <div className="rounded border border-amber-300 bg-amber-50 p-2 text-sm" data-testid="task-overrides">
            <p className="font-medium">Overridden</p>
            {overrides.map((o) => (
              <p key={`${o.actor}~${o.override_id}`}>
                {formatTime(o.ts)} · {o.actor} ({o.token_label}): {o.note}
              </p>
            ))}
          </div>
        )}
      </LedgerSection>

      <LedgerSection id="spec-heading" title="Spec">
        <pre tabIndex={0} className="overflow-x-auto rounded bg-slate-50 p-2 text-xs" data-testid="task-spec">
          {JSON.stringify(task.spec, null, 2)}
        </pre>
      </LedgerSection>

      <LedgerSection id="runs-heading" title="Runs">
        <LedgerRunTimeline runs={runs} />
        <OlderNotShown count={omitted.runs} noun="runs" />
      </LedgerSection>

      <LedgerSection id="validations-heading" title="Validations">
        {validations.length === 0 ? (
          <p className="text-sm text-slate-600">No validations recorded.</p>
        ) : (
          <table tabIndex={0} className="data" data-testid="validations-table">
            <thead>
              <tr>
                <th>When</th>
                <th>Validation</th>
                <th>Run</th>
                <th>Critic</th>
                <th>Runner</th>
                <th>Details</th>
              </tr>
            </thead>
            <tbody>
              {validations.map((v) => (
                <tr key={v.validation_id}>
                  <td>{formatTime(v.ts)}</td>
                  <td className="font-mono text-xs">{v.validation_id}</td>
                  <td className="font-mono text-xs">{v.run_id ?? "—"}</td>
                  <td>{v.critic_passed === null ? "not run" : v.critic_passed ? "passed" : "failed"}</td>
                  <td>{v.runner_passed === null ? "not run" : v.runner_passed ? "passed" : "failed"}</td>
                  <td>
                    <code className="text-xs">{v.details === null ? "" : JSON.stringify(v.details)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </LedgerSection>

      <LedgerSection id="artifacts-heading" title="Artifacts produced">
        {artifacts.length === 0 ? (
          <p className="text-sm text-slate-600">No artifacts recorded for this task.</p>
        ) : (
          <table tabIndex={0} className="data" data-testid="artifacts-table">
            <thead>
              <tr>
                <th>Artifact</th>
                <th>Store</th>
                <th>Model</th>
                <th>Input hash</th>
                <th>Run</th>
              </tr>
            </thead>
            <tbody>
              {artifacts.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Link className="underline" href={`/ledger/artifacts?${new URLSearchParams({ artifact_type: a.artifact_type, artifact_id: a.artifact_id, store: a.store }).toString()}`}>
                      {a.artifact_type}/{a.artifact_id}
                    </Link>
                  </td>
                  <td>{a.store}</td>
                  <td>{a.model_name ? `${a.model_name} ${a.model_version}` : "—"}</td>
                  <td>
                    <LedgerHash value={a.input_hash} />
                  </td>
                  <td className="font-mono text-xs">{a.run_id ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </LedgerSection>
      <OlderNotShown count={omitted.artifacts} noun="artifacts" />
    </div>
  );
}

/** A task's lists keep their newest entries within DUALMIND_LIST_MAX_BYTES; say how many older ones are not shown. */
function OlderNotShown({ count, noun }: { count: number; noun: string }) {
  if (count === 0) return null;
  return <p className="text-sm text-slate-600" data-testid={`older-${noun}`}>{count} older {noun} not shown (answers are bounded by DUALMIND_LIST_MAX_BYTES).</p>;
}
