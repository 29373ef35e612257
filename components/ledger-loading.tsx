/** Skeleton shown while a ledger or sessions page queries SQLite. */
export function LedgerLoading({ title }: { title: string }) {
  return (
    <div className="space-y-4" role="status" aria-busy="true" aria-label="Loading">
      <h1 className="text-2xl font-semibold">{title}</h1>
      <div className="card space-y-2">
        {[0, 1, 2, 3].map((i) => (
          <div key={i} className="h-4 animate-pulse rounded bg-slate-200" />
        ))}
      </div>
    </div>
  );
}
