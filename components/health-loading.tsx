/** Skeleton for the Health and Observability pages while the server renders. */
export function HealthLoading() {
  return (
    <div className="space-y-4" role="status" aria-busy="true" aria-label="Loading">
      <div className="h-8 w-40 animate-pulse rounded bg-slate-200" />
      <div className="h-20 animate-pulse rounded-lg bg-slate-200" />
      <div className="grid gap-4 lg:grid-cols-2">
        {Array.from({ length: 6 }, (_, i) => (
          <div key={i} className="h-64 animate-pulse rounded-lg bg-slate-200" />
        ))}
      </div>
    </div>
  );
}
