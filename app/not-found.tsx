import Link from "@/components/link";

/** An address no route serves (the dashboard's own 404, inside its layout, answers unknown ids). */
export default function NotFound() {
  return (
    <main className="mx-auto max-w-xl space-y-3 px-4 py-16" data-testid="not-found">
      <h1 className="text-2xl font-semibold">Not found</h1>
      <p className="text-sm text-slate-700">No page lives at this address.</p>
      <p>
        <Link href="/" className="btn">
          Back to the dashboard
        </Link>
      </p>
    </main>
  );
}
