import { requireUser } from "@/app/_server/session";
import { Nav } from "@/components/nav";
import { RememberStore } from "@/components/remember-store";
import { SignOutButton } from "@/components/sign-out-button";
import { backendNotice } from "@/lib/metrics/dashboard-views";
import { Suspense } from "react";

export const dynamic = "force-dynamic";

export default async function DashboardLayout({ children }: { children: React.ReactNode }) {
  const user = await requireUser();
  const notice = backendNotice();
  return (
    <div className="min-h-screen">
      {/* The first stop for keyboard users: past the navigation, straight to the page. */}
      <a href="#main-content" className="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:z-50 focus:rounded focus:bg-white focus:px-3 focus:py-2 focus:text-sm focus:shadow">
        Skip to content
      </a>
      <header className="border-b border-slate-200 bg-white">
        <div className="mx-auto flex max-w-6xl flex-wrap items-center gap-x-4 gap-y-2 px-4 py-3">
          <span className="text-lg font-semibold">dualmind</span>
          <Nav isAdmin={user.role === "admin"} />
          <div className="ml-auto flex min-w-0 items-center gap-3 text-sm text-slate-600">
            <span data-testid="current-user" className="max-w-[10rem] truncate sm:max-w-none" title={`${user.username} · ${user.role}`}>
              {user.username} · {user.role}
            </span>
            <SignOutButton />
          </div>
        </div>
      </header>
      {/* min-w-0 + break-words: a long id or hash wraps instead of widening the page on a phone. */}
      {notice && (
        <div role="status" data-testid="stores-on-postgres" className="border-b border-amber-200 bg-amber-50">
          <p className="mx-auto max-w-6xl px-4 py-2 text-sm text-amber-900">{notice}</p>
        </div>
      )}
      <main id="main-content" tabIndex={-1} className="mx-auto min-w-0 max-w-6xl break-words px-4 py-6">{children}</main>
      <Suspense fallback={null}>
        <RememberStore />
      </Suspense>
    </div>
  );
}
