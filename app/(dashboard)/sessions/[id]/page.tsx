import { LedgerSection } from "@/components/ledger-section";
import Link from "@/components/link";
import { notFound } from "next/navigation";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { SessionPhaseTimeline } from "@/components/session-phase-timeline";
import { SessionTranscript } from "@/components/session-transcript";
import { SessionAnnotations } from "@/components/session-annotations";
import { SessionAbandonForm, SessionNoteForm } from "@/components/session-notes";
import { roleAtLeast } from "@/lib/auth/users";
import { formatTime } from "@/lib/format";
import { ANNOTATION_MAX_CHARS, sessionIdleClock, type SessionView } from "@/lib/governance/dialectic";
import { governance } from "@/lib/backend/governance";
import { timeCall } from "@/lib/http/request-timer";
import { requireUser } from "@/app/_server/session";
import { findByClientId } from "@/app/_server/pages";
import { abandonSessionAction, annotateSessionAction } from "../actions";
import { ReasonWithAgentText } from "@/components/health-events-table";
import { OwnedIdChoices } from "@/components/owned-id-choices";

type Props = { params: Promise<{ id: string }> };

export default async function SessionPage({ params }: Props) {
  const user = await requireUser();
  // Next hands params already decoded: decoding again broke on an id holding `%`.
  const id = (await params).id;
  const lookup = await findByClientId<SessionView>({
    id,
    load: (sessionId) => timeCall({ route: "dialectic detail", fn: () => governance().getDialecticSession({ sessionId }) }),
    choices: (clientId) => governance().listDialecticSessionsByClientId({ clientId }),
  });
  if (!lookup) notFound();
  if ("choices" in lookup) return <OwnedIdChoices kind="review" id={id} basePath="/sessions" backHref="/sessions" backLabel="Sessions" choices={lookup.choices} />;
  const session = lookup.found;
  const messages = session.messages ?? [];
  const notes = await governance().listDialecticAnnotations({ sessionId: session.key });
  const clock = sessionIdleClock({ session });
  // Checked against the database on every view: the page says whether the transcript is intact.
  const signatures = await governance().verifyDialecticSession({ sessionId: session.key });
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href="/sessions" className="text-sm underline">
          ← Sessions
        </Link>
        <h1 className="text-2xl font-semibold">{session.topic}</h1>
        <p className="flex flex-wrap items-center gap-2 text-sm text-slate-600">
          <span className="font-mono">{session.key}</span> · {session.session_type} · <LedgerVerdictBadge value={session.status} testId="session-status" /> · started {formatTime(session.created_at)}
          <a className="btn-secondary ml-auto" href={`/sessions/${encodeURIComponent(session.key)}/export`} download={`session-${session.key}.json`}>
            Export JSON
          </a>
        </p>
      </div>

      <section className="grid gap-3 sm:grid-cols-3" aria-label="Agents and integrity">
        <div className="card">
          <p className="label">Paused agent (thesis)</p>
          <p className="font-medium" data-testid="paused-agent">
            {session.paused_agent_id}
          </p>
        </div>
        <div className="card">
          <p className="label">Reviewer (antithesis)</p>
          <p className="font-medium" data-testid="reviewer-agent">
            {session.reviewer_agent_id ?? "not claimed yet"}
          </p>
        </div>
        <div className="card">
          <p className="label">Signatures</p>
          {signatures.ok ? (
            <p className="font-medium text-emerald-700" data-testid="signature-status">
              verified ({signatures.messages} messages)
            </p>
          ) : (
            <p className="font-medium text-red-700" data-testid="signature-status" role="alert">
              broken at message {signatures.broken_at_seq}: {signatures.reason}
            </p>
          )}
        </div>
      </section>

      <LedgerSection id="timeline-heading" title="Phase">
        <SessionPhaseTimeline phase={session.phase} messages={messages} createdAt={session.created_at} updatedAt={session.updated_at} />
        {session.status === "active" && (
          <p className="text-sm text-slate-600" data-testid="session-waiting">
            Next: {session.expected.note}
            {session.expected.agent_ids.length > 0 && ` (${session.expected.agent_ids.join(" or ")})`} · synthesis round {session.synthesis_rounds} of {session.max_rounds}
            {clock && ` · idle since ${formatTime(clock.idleSince)} · times out at ${formatTime(clock.timesOutAt)}`}
          </p>
        )}
        {session.status === "active" && user.role === "admin" && <SessionAbandonForm sessionId={session.key} action={abandonSessionAction} />}
      </LedgerSection>

      {session.status !== "active" && (
        <LedgerSection
          id="resolution-heading"
          title={session.status === "resolved" ? "Resolution" : "Failed"}
          className={session.status === "resolved" ? "border-emerald-300" : "border-red-300"}
          testId="resolution"
        >
          {session.resolution ? (
            <>
              <p className="text-sm">Agreed by {session.resolution.agreed_by.join(" and ")} at message #{session.resolution.seq}.</p>
              {session.resolution.conditions.length > 0 ? (
                <ul className="list-disc pl-5 text-sm">
                  {session.resolution.conditions.map((c, i) => (
                    <li key={i}>{c}</li>
                  ))}
                </ul>
              ) : (
                <p className="text-sm text-slate-600">No conditions.</p>
              )}
            </>
          ) : (
            <div className="text-sm">{session.failure_reason && <ReasonWithAgentText reason={session.failure_reason} />}</div>
          )}
        </LedgerSection>
      )}

      <div className="grid gap-4 lg:grid-cols-[minmax(0,2fr)_minmax(0,1fr)]">
        <LedgerSection id="transcript-heading" title="Transcript">
          <SessionTranscript messages={messages} pausedAgentId={session.paused_agent_id} />
        </LedgerSection>
        <LedgerSection id="notes-heading" title={`Notes (${notes.length})`} testId="session-notes-panel">
          <p className="text-xs text-slate-500">Notes from people, beside the review: not messages of it, so they never change its phase or turn.</p>
          <SessionAnnotations notes={notes} />
          {roleAtLeast({ role: user.role, min: "editor" }) && <SessionNoteForm sessionId={session.key} maxChars={ANNOTATION_MAX_CHARS} action={annotateSessionAction} />}
        </LedgerSection>
      </div>
    </div>
  );
}
