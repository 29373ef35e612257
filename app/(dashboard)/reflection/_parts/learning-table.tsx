import Link from "@/components/link";
import { TimeAgo } from "@/components/time-ago";
import { formatCount, formatDecimal } from "@/lib/format";
import type { Learning } from "@/lib/recall/learnings";
import { reflectionHref } from "./links";
import { PoisonFlagBadges } from "@/components/poison-flags";

/** Learnings as rows: the predicate links to the learning's page. */
export function LearningTable({ store, learnings, now }: { store: string; learnings: Learning[]; now: number }) {
  return (
    <div className="scroll-x">
      <table tabIndex={0} className="data">
        <thead>
          <tr>
            <th>Predicate</th>
            <th>Description</th>
            <th>Confidence</th>
            <th>Seen</th>
            <th>Last seen</th>
          </tr>
        </thead>
        <tbody>
          {learnings.map((l) => (
            <tr key={l.id} data-testid={`learning-row-${l.id}`}>
              <td>
                <Link href={reflectionHref.learning(store, l.id)} className="underline">
                  {l.predicate}
                </Link>{" "}
                <PoisonFlagBadges flags={l.flags} />
              </td>
              <td className="min-w-48 text-xs">{l.description || "—"}</td>
              <td>{formatDecimal(l.confidence, 2)}</td>
              <td>{formatCount(l.seen_count)}×</td>
              <td className="text-xs">
                <TimeAgo ms={l.last_seen_at} now={now} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
