import Link from "@/components/link";
import { RANGE_KEYS, type RangeKey } from "@/lib/metrics/preparers";
import { chartRangeQuery, formatBucketWidth, type ChartRange } from "@/lib/metrics/time-range";

/**
 * Range and store pickers as links, and a custom from/to range as a GET form:
 * the whole view is in the URL, so it can be shared. A custom range the
 * charts cannot show says why beside the picker.
 */
export function HealthPickers({ path, range, store, stores }: { path: string; range: ChartRange; store?: string; stores?: string[] }) {
  const withStore = (query: string, s?: string) => `${path}?${query}${s ? `&store=${encodeURIComponent(s)}` : ""}`;
  const pill = (active: boolean) => `rounded-md px-2.5 py-1 text-sm ${active ? "bg-slate-900 text-white" : "border border-slate-300 bg-white text-slate-700 hover:bg-slate-100"}`;
  const custom = range.key === "custom";
  return (
    <div className="space-y-2" data-testid="range-picker">
      <div className="flex flex-wrap items-center gap-4">
        <nav aria-label="Time range" className="flex gap-1">
          {RANGE_KEYS.map((r: RangeKey) => (
            <Link key={r} href={withStore(`range=${r}`, store)} aria-current={r === range.key ? "true" : undefined} className={pill(r === range.key)}>
              {r}
            </Link>
          ))}
        </nav>
        {stores && (
          <nav aria-label="Store" className="flex flex-wrap gap-1">
            {["all", ...stores].map((s) => (
              <Link key={s} href={withStore(chartRangeQuery(range), s)} aria-current={s === store ? "true" : undefined} className={pill(s === store)}>
                {s === "all" ? "all stores" : s}
              </Link>
            ))}
          </nav>
        )}
      </div>
      <form method="get" action={path} aria-label="Custom time range" className="flex flex-wrap items-end gap-2">
        {store && <input type="hidden" name="store" value={store} />}
        <TimeField name="from" label="From (UTC)" value={range.from} error={range.error} />
        <TimeField name="to" label="To (UTC)" value={range.to} error={range.error} />
        <button className={custom ? "btn" : "btn-secondary"} aria-current={custom ? "true" : undefined}>
          Show range
        </button>
      </form>
      <p className="text-xs text-slate-600" data-testid="range-shown">
        Showing {range.label} in buckets of {formatBucketWidth(range.window.stepMs)}.{range.notes.length > 0 && ` ${range.notes.join(" ")}`}
      </p>
      {range.error && (
        <p id="range-error" role="alert" className="text-sm text-red-700" data-testid="range-error">
          {range.error}
        </p>
      )}
    </div>
  );
}

function TimeField({ name, label, value, error }: { name: "from" | "to"; label: string; value: string; error: string | null }) {
  return (
    <div>
      <label className="label" htmlFor={`range-${name}`}>
        {label}
      </label>
      <input id={`range-${name}`} className="input" type="datetime-local" name={name} defaultValue={value} required aria-invalid={error ? true : undefined} aria-describedby={error ? "range-error" : undefined} />
    </div>
  );
}
