import Link from "@/components/link";

/** A signed-in person on a page their role does not open (requireAdmin → forbidden()): a 403 that says why, inside the layout. */
export default function DashboardForbidden() {
  return (
    <section className="card mx-auto max-w-xl space-y-3" data-testid="forbidden">
      <h1 className="text-2xl font-semibold">Admins only</h1>
      <p className="text-sm text-slate-700">This page manages users, API tokens and jobs, so only admins may open it. Ask an admin if you need something changed here.</p>
      <p>
        <Link href="/" className="btn">
          Back to the Overview
        </Link>
      </p>
    </section>
  );
}
