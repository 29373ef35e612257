"use client";

import Link from "@/components/link";
import { usePathname } from "next/navigation";
import { useState } from "react";

const LINKS = [
  { href: "/", label: "Overview" },
  { href: "/search", label: "Search" },
  { href: "/memories", label: "Memories" },
  { href: "/graph", label: "Graph" },
  { href: "/sessions", label: "Sessions" },
  { href: "/ledger", label: "Ledger" },
  { href: "/activity", label: "Activity" },
  { href: "/reflection", label: "Reflection" },
  { href: "/health", label: "Health" },
  { href: "/observability", label: "Observability" },
  { href: "/api-docs", label: "API" },
  { href: "/admin", label: "Admin", adminOnly: true },
];

/**
 * The main navigation. On a wide screen every link shows in the header; on a
 * phone the links fold behind a Menu button (they took ~220 px of a 390 px
 * screen) and fold again after a link is followed.
 */
export function Nav({ isAdmin }: { isAdmin: boolean }) {
  const pathname = usePathname();
  const [open, setOpen] = useState(false);
  // Fold the menu when the page changes, as a phone user expects after tapping a link.
  const [shownFor, setShownFor] = useState(pathname);
  if (shownFor !== pathname) {
    setShownFor(pathname);
    setOpen(false);
  }
  return (
    <>
      {/* The wrapper hides the button on wide screens: .btn-secondary's own display would win over md:hidden on the button. */}
      <div className="md:hidden">
        <button type="button" className="btn-secondary" aria-expanded={open} aria-controls="main-nav" onClick={() => setOpen((o) => !o)} data-testid="nav-menu-button">
          {open ? "Close" : "Menu"}
        </button>
      </div>
      <nav id="main-nav" aria-label="Main" className={`${open ? "flex" : "hidden"} order-last basis-full flex-col gap-1 md:order-none md:flex md:basis-auto md:flex-row md:flex-wrap`}>
        {LINKS.filter((l) => !l.adminOnly || isAdmin).map((l) => {
          const active = l.href === "/" ? pathname === "/" : pathname.startsWith(l.href);
          return (
            <Link
              key={l.href}
              href={l.href}
              aria-current={active ? "page" : undefined}
              className={`flex min-h-10 items-center rounded-md px-3 py-1.5 text-sm md:min-h-0 ${active ? "bg-slate-900 text-white" : "text-slate-700 hover:bg-slate-200"}`}
            >
              {l.label}
            </Link>
          );
        })}
      </nav>
    </>
  );
}
