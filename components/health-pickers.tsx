import Link from "next/link";
import { RANGE_KEYS, type RangeKey } from "@/lib/metrics/preparers";

/** Range and store pickers as links: the whole view is in the URL, so it can be shared. */
export function HealthPickers({ path, range, store, stores }: { path: string; range: RangeKey; store?: string; stores?: string[] }) {
  const href = (r: RangeKey, s?: string) => `${path}?range=${r}${s ? `&store=${encodeURIComponent(s)}` : ""}`;
  const pill = (active: boolean) => `rounded-md px-2.5 py-1 text-sm ${active ? "bg-slate-900 text-white" : "border border-slate-300 bg-white text-slate-700 hover:bg-slate-100"}`;
  return (
    <div className="flex flex-wrap items-center gap-4">
      <nav aria-label="Time range" className="flex gap-1">
        {RANGE_KEYS.map((r) => (
          <Link key={r} href={href(r, store)} aria-current={r === range ? "true" : undefined} className={pill(r === range)}>
            {r}
          </Link>
        ))}
      </nav>
      {stores && (
        <nav aria-label="Store" className="flex flex-wrap gap-1">
          {["all", ...stores].map((s) => (
            <Link key={s} href={href(range, s)} aria-current={s === store ? "true" : undefined} className={pill(s === store)}>
              {s === "all" ? "all stores" : s}
            </Link>
          ))}
        </nav>
      )}
    </div>
  );
}
