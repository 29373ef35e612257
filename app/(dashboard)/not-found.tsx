import Link from "@/components/link";

/** An unknown id or path inside the dashboard: said plainly, with the navigation still there and a way on. */
export default function DashboardNotFound() {
  return (
    <section className="card mx-auto max-w-xl space-y-3" data-testid="not-found">
      <h1 className="text-2xl font-semibold">Not found</h1>
      <p className="text-sm text-slate-700">Nothing lives at this address: the id may be mistyped, or the item was deleted or expired.</p>
      <p className="flex flex-wrap gap-3 text-sm">
        <Link href="/" className="btn">
          Back to the Overview
        </Link>
        <Link href="/search" className="btn-secondary">
          Search
        </Link>
      </p>
    </section>
  );
}
