import { formatDateTime, formatRelative } from "@/lib/format";

/**
 * A moment as people read it: relative ("5 minutes ago") with the absolute
 * local time and its zone beside it on wide screens and in the tooltip.
 * A server component: `now` is the request time (requestTime()), so there is no hydration skew.
 */
export function TimeAgo({ ms, now, showAbsolute = false }: { ms: number | null | undefined; now: number; showAbsolute?: boolean }) {
  if (!ms) return <span>—</span>;
  const absolute = formatDateTime(ms);
  return (
    <time dateTime={new Date(ms).toISOString()} title={absolute} className="whitespace-nowrap">
      {formatRelative(ms, now)}
      {showAbsolute && <span className="text-slate-500"> · {absolute}</span>}
    </time>
  );
}
