import { ActorLink } from "@/components/actor-link";
import { formatTime } from "@/lib/format";
import type { DialecticMessage } from "@/lib/governance/dialectic";

const TYPE_STYLE: Record<DialecticMessage["message_type"], string> = {
  thesis: "border-sky-300 bg-sky-50",
  antithesis: "border-amber-300 bg-amber-50",
  synthesis: "border-emerald-300 bg-emerald-50",
};
const TYPE_LABEL: Record<DialecticMessage["message_type"], string> = { thesis: "Thesis", antithesis: "Antithesis", synthesis: "Synthesis" };

function List({ title, items }: { title: string; items: string[] | null }) {
  if (!items || items.length === 0) return null;
  return (
    <div>
      <p className="label">{title}</p>
      <ul className="list-disc pl-5">
        {items.map((c, i) => (
          <li key={i}>{c}</li>
        ))}
      </ul>
    </div>
  );
}

/** The transcript as a conversation: the paused agent on the left, the reviewer on the right. */
export function SessionTranscript({ messages, pausedAgentId }: { messages: DialecticMessage[]; pausedAgentId: string }) {
  if (messages.length === 0) return <p className="text-sm text-slate-600">No messages yet.</p>;
  return (
    <ol className="space-y-3" aria-label="Transcript" data-testid="transcript">
      {messages.map((m) => {
        const mine = m.agent_id === pausedAgentId;
        return (
          <li key={m.id} className={`flex ${mine ? "justify-start" : "justify-end"}`}>
            <article className={`w-full max-w-2xl space-y-2 rounded-lg border p-3 text-sm ${TYPE_STYLE[m.message_type]}`} data-testid={`message-${m.seq}`} aria-label={`${TYPE_LABEL[m.message_type]} by ${m.agent_id}`}>
              <header className="flex flex-wrap items-center gap-2">
                <span className="font-semibold" data-testid="message-type">
                  {TYPE_LABEL[m.message_type]}
                </span>
                <span className="text-slate-700">
                  <ActorLink agentId={m.agent_id} />
                </span>
                <span className="text-xs text-slate-700">
                  #{m.seq} · {formatTime(m.timestamp)}
                </span>
                {m.agrees !== null && (
                  <span className={`ml-auto rounded px-2 py-0.5 text-xs font-medium ${m.agrees ? "bg-emerald-200 text-emerald-900" : "bg-red-100 text-red-800"}`}>{m.agrees ? "agrees" : "does not agree"}</span>
                )}
              </header>
              <p className="whitespace-pre-wrap">{m.reasoning}</p>
              {m.root_cause && (
                <div>
                  <p className="label">Root cause</p>
                  <p>{m.root_cause}</p>
                </div>
              )}
              <List title="Proposed conditions" items={m.proposed_conditions} />
              <List title="Concerns" items={m.concerns} />
              {m.observed_metrics && Object.keys(m.observed_metrics).length > 0 && (
                <div>
                  <p className="label">Observed metrics</p>
                  <dl className="grid grid-cols-2 gap-x-4 text-xs sm:grid-cols-4">
                    {Object.entries(m.observed_metrics).map(([k, v]) => (
                      <div key={k}>
                        <dt className="text-slate-700">{k}</dt>
                        <dd className="font-mono">{String(v)}</dd>
                      </div>
                    ))}
                  </dl>
                </div>
              )}
              <p className="font-mono text-[10px] text-slate-600" title={m.signature}>
                sig {m.signature.slice(0, 16)}…
              </p>
            </article>
          </li>
        );
      })}
    </ol>
  );
}
