import Link from "@/components/link";
import { TimeAgo } from "@/components/time-ago";
import { formatDecimal, formatDuration, formatQuantity } from "@/lib/format";
import { PoisonFlagBadges } from "@/components/poison-flags";
import { poisonFlags } from "@/lib/poison";
import type { RecallEvent } from "@/lib/recall/events";
import { reflectionHref } from "./links";

/** Recalls, each linked to its own page, with the hits it returned linked to their traces and learnings. */
export function RecallList({ store, recalls, now }: { store: string; recalls: RecallEvent[]; now: number }) {
  if (recalls.length === 0) return <p className="text-sm text-slate-600">No recalls yet.</p>;
  return (
    <ul className="space-y-3">
      {recalls.map((r) => (
        <li key={r.id} className="border-b border-slate-100 pb-2" data-testid={`recall-${r.id}`}>
          <div className="flex flex-wrap items-center gap-x-2 gap-y-1 text-sm">
            <Link href={reflectionHref.recall(store, r.id)} className="font-medium underline">
              “{r.query}”
            </Link>
            <span className="text-slate-500">
              by {r.agentId} · <TimeAgo ms={r.createdAt} now={now} /> · {formatDuration(r.latencyMs)} · {r.mode}
              {r.fallbackReason ? ` (fallback: ${r.fallbackReason})` : ""} · {formatQuantity(r.hits.length, "hit")}
            </span>
            {r.warning && <span className="rounded bg-red-100 px-2 py-0.5 text-xs text-red-800">past failure warning</span>}
          </div>
          <RecallHits store={store} recall={r} />
        </li>
      ))}
    </ul>
  );
}

/** The hits of one recall in rank order, each a link to what it found. */
export function RecallHits({ store, recall }: { store: string; recall: RecallEvent }) {
  if (recall.hits.length === 0) return <p className="text-xs text-slate-500">no hits above the gate</p>;
  return (
    <ol className="ml-5 list-decimal space-y-0.5 text-xs text-slate-700">
      {recall.hits.map((h) => (
        <li key={h.id} data-testid={`recall-hit-${h.id}`}>
          <Link href={reflectionHref.hit(store, h)} className="underline">
            {h.artifact} #{h.refId}
          </Link>{" "}
          · score {formatDecimal(h.score, 3)} · {h.summary} <PoisonFlagBadges flags={poisonFlags({ fields: { summary: h.summary } })} />
          {h.relevant !== null && <span className="ml-1 text-slate-500">(rated {h.relevant ? "relevant" : "not relevant"})</span>}
        </li>
      ))}
    </ol>
  );
}
