"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";

const LINKS = [
  { href: "/", label: "Overview" },
  { href: "/search", label: "Search" },
  { href: "/memories", label: "Memories" },
  { href: "/graph", label: "Graph" },
  { href: "/sessions", label: "Sessions" },
  { href: "/ledger", label: "Ledger" },
  { href: "/reflection", label: "Reflection" },
  { href: "/health", label: "Health" },
  { href: "/observability", label: "Observability" },
  { href: "/api-docs", label: "API" },
  { href: "/admin", label: "Admin", adminOnly: true },
];

export function Nav({ isAdmin }: { isAdmin: boolean }) {
  const pathname = usePathname();
  return (
    <nav aria-label="Main" className="flex flex-wrap gap-1">
      {LINKS.filter((l) => !l.adminOnly || isAdmin).map((l) => {
        const active = l.href === "/" ? pathname === "/" : pathname.startsWith(l.href);
        return (
          <Link
            key={l.href}
            href={l.href}
            aria-current={active ? "page" : undefined}
            className={`rounded-md px-3 py-1.5 text-sm ${active ? "bg-slate-900 text-white" : "text-slate-700 hover:bg-slate-200"}`}
          >
            {l.label}
          </Link>
        );
      })}
    </nav>
  );
}
