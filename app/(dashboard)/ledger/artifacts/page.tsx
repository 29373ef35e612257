import { LedgerSection } from "@/components/ledger-section";
import Link from "@/components/link";
import { LedgerHash } from "@/components/ledger-hash";
import { LedgerRunTimeline } from "@/components/ledger-run-timeline";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { formatTime } from "@/lib/format";
import { artifactLookupSchema } from "@/lib/governance/ledger";
import { governance } from "@/lib/backend/governance";
import { requireUser } from "@/app/_server/session";
import { filledParams } from "@/app/_server/pages";

type Props = { searchParams: Promise<Record<string, string | string[] | undefined>> };

export default async function ArtifactPage({ searchParams }: Props) {
  await requireUser();
  const parsed = artifactLookupSchema.safeParse(filledParams(await searchParams));
  if (!parsed.success) {
    return (
      <div className="space-y-4">
        <Link href="/ledger" className="text-sm underline">
          ← Ledger
        </Link>
        <p role="alert" className="text-sm text-red-600">
          Give an artifact type and id to look up.
        </p>
      </div>
    );
  }
  const q = parsed.data;
  const proofs = await governance().getProofsByArtifact({ input: q });
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href="/ledger" className="text-sm underline">
          ← Ledger
        </Link>
        <h1 className="text-2xl font-semibold">
          {q.artifact_type}/{q.artifact_id}
          {q.store ? ` in ${q.store}` : ""}
        </h1>
      </div>
      {proofs.provenance.length === 0 ? (
        <p className="card text-sm text-slate-600" data-testid="no-provenance">
          Nothing in the ledger produced this artifact.
        </p>
      ) : (
        <>
          <LedgerSection id="prov-heading" title="Provenance">
            <table tabIndex={0} className="data" data-testid="provenance-table">
              <thead>
                <tr>
                  <th>Recorded</th>
                  <th>Store</th>
                  <th>Model</th>
                  <th>Fingerprint</th>
                  <th>Chunking</th>
                  <th>Input hash</th>
                  <th>By</th>
                </tr>
              </thead>
              <tbody>
                {proofs.provenance.map((p) => (
                  <tr key={p.id}>
                    <td>{formatTime(p.created_at)}</td>
                    <td>{p.store}</td>
                    <td>{p.model_name ? `${p.model_name} ${p.model_version}` : "—"}</td>
                    <td>{p.fingerprint ?? "—"}</td>
                    <td>{p.chunking_version ?? "—"}</td>
                    <td>
                      <LedgerHash value={p.input_hash} />
                    </td>
                    <td>{p.recorded_by}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </LedgerSection>
          <LedgerSection id="producers-heading" title="Produced by">
            {/* Each task with its own runs (not every run under the last task). */}
            {proofs.tasks.map(({ task, verdict }) => (
              <div key={task.key} className="space-y-2" data-testid={`producer-${task.task_id}`}>
                <p className="flex items-center gap-2 text-sm">
                  <Link className="underline" href={`/ledger/tasks/${encodeURIComponent(task.key)}`}>
                    {task.intent}
                  </Link>
                  <LedgerVerdictBadge value={verdict} />
                </p>
                <LedgerRunTimeline runs={proofs.runs.filter((r) => r.task_id === task.task_id)} />
              </div>
            ))}
            {proofs.runs.some((r) => !proofs.tasks.some((t) => t.task.task_id === r.task_id)) && (
              <LedgerRunTimeline runs={proofs.runs.filter((r) => !proofs.tasks.some((t) => t.task.task_id === r.task_id))} />
            )}
          </LedgerSection>
        </>
      )}
    </div>
  );
}
