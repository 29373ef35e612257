/** A record read as fields: a label column and a value column, stacking on a phone. */
export function Fields({ rows, testId }: { rows: [string, React.ReactNode][]; testId?: string }) {
  return (
    <dl className="grid gap-x-4 gap-y-2 text-sm sm:grid-cols-[12rem_1fr]" data-testid={testId}>
      {rows.map(([label, value]) => (
        <div key={label} className="contents">
          <dt className="font-medium text-slate-500">{label}</dt>
          <dd className="min-w-0 break-words">{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** Tags as chips; "none" when there are none. */
export function Chips({ items, empty = "none" }: { items: string[]; empty?: string }) {
  if (items.length === 0) return <span className="text-slate-500">{empty}</span>;
  return (
    <span className="flex flex-wrap gap-1">
      {items.map((t) => (
        <span key={t} className="rounded bg-slate-100 px-2 py-0.5 text-xs text-slate-700">
          {t}
        </span>
      ))}
    </span>
  );
}

export function OutcomeBadge({ outcome }: { outcome: "success" | "failure" }) {
  return <span className={`rounded px-2 py-0.5 text-xs font-medium ${outcome === "failure" ? "bg-red-100 text-red-800" : "bg-emerald-100 text-emerald-800"}`}>{outcome}</span>;
}
