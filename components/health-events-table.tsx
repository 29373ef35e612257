import type { HealthEvent } from "@/lib/governance/health-events";
import { formatTime } from "@/lib/format";
import { splitFailureReason } from "@/lib/governance/dialectic";

/** The system's words, then any text an agent wrote, quoted as the agent's (never as dualmind's own). */
export function ReasonWithAgentText({ reason }: { reason: string }) {
  const { system, agentId, agentText } = splitFailureReason(reason);
  return (
    <>
      {system}
      {agentText !== null && (
        <blockquote className="mt-1 border-l-2 border-amber-400 pl-2 text-xs text-slate-700" data-testid="agent-text">
          <span className="block font-medium">{agentId ? `agent ${agentId} wrote (not checked by dualmind):` : "an agent wrote (not checked by dualmind):"}</span>
          <q>{agentText}</q>
        </blockquote>
      )}
    </>
  );
}

const WEBHOOK: Record<HealthEvent["webhookState"], string> = { none: "not sent (no webhook)", pending: "sending", delivered: "delivered", failed: "failed" };

/** Recent status changes and failed dialectic sessions, newest first. */
export function HealthEventsTable({ events }: { events: HealthEvent[] }) {
  return (
    <section className="card space-y-2 text-sm" aria-labelledby="events-heading" data-testid="health-events">
      <h2 id="events-heading" className="text-lg font-medium">
        Recent events
      </h2>
      {events.length === 0 ? (
        <p className="text-slate-600">No status changes or failed reviews recorded yet.</p>
      ) : (
        <table tabIndex={0} className="data">
          <thead>
            <tr>
              <th>When (UTC)</th>
              <th>What</th>
              <th>Change</th>
              <th>Why</th>
              <th>Webhook</th>
            </tr>
          </thead>
          <tbody>
            {events.map((e) => (
              <tr key={e.id} data-testid="health-event" data-status={e.status}>
                <td className="whitespace-nowrap">{formatTime(e.ts)}</td>
                <td>{e.kind === "store_status" ? `store ${e.store}` : e.kind === "self_recall" ? `self-recall of ${e.store}` : `review ${e.subject}`}</td>
                <td>{e.previousStatus ? `${e.previousStatus.replace("_", " ")} → ${e.status.replace("_", " ")}` : e.status.replace("_", " ")}</td>
                <td>{e.kind === "dialectic_failed" ? <ReasonWithAgentText reason={e.reason} /> : e.reason}</td>
                <td>
                  {WEBHOOK[e.webhookState]}
                  {e.webhookError && <span className="block text-xs text-red-700">{e.webhookError}</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
