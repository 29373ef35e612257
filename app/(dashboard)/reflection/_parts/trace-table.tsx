import Link from "@/components/link";
import { TimeAgo } from "@/components/time-ago";
import { formatCount } from "@/lib/format";
import type { Trace } from "@/lib/recall/traces";
import { Chips, OutcomeBadge } from "./fields";
import { reflectionHref } from "./links";
import { PoisonFlagBadges } from "@/components/poison-flags";

/** Traces as rows of fields: the intent links to the trace's page. */
export function TraceTable({ store, traces, now }: { store: string; traces: Trace[]; now: number }) {
  return (
    <div className="scroll-x">
      <table tabIndex={0} className="data">
        <thead>
          <tr>
            <th>Intent</th>
            <th>Outcome</th>
            <th>Key issue</th>
            <th>Tags</th>
            <th>Agent</th>
            <th>Seen</th>
            <th>Last seen</th>
          </tr>
        </thead>
        <tbody>
          {traces.map((t) => (
            <tr key={t.id} data-testid={`trace-row-${t.id}`}>
              <td className="min-w-48">
                <Link href={reflectionHref.trace(store, t.id)} className="underline">
                  <span className="font-medium">{t.intent.verb}</span> {t.intent.target}
                </Link>
                {t.shard_type && <div className="text-xs text-slate-500">shard {t.shard_type}</div>}
                <PoisonFlagBadges flags={t.flags} />
              </td>
              <td>
                <OutcomeBadge outcome={t.outcome} />
              </td>
              <td className="min-w-40 text-xs">{t.key_issue || "—"}</td>
              <td>
                <Chips items={t.error_tags} empty="—" />
              </td>
              <td className="text-xs">{t.agent_id}</td>
              <td>{formatCount(t.seen_count)}×</td>
              <td className="text-xs">
                <TimeAgo ms={t.last_seen_at} now={now} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
