import Link from "@/components/link";

/** "N things · page p" with Previous / Next links that keep the current filters. */
export function LedgerPager({ label, noun, total, page, pageSize, hrefFor }: { label: string; noun: string; total: number; page: number; pageSize: number; hrefFor: (page: number) => string }) {
  return (
    <nav aria-label={label} className="flex items-center gap-3 text-sm">
      <span>
        {total} {noun}
        {total === 1 ? "" : "s"} · page {page}
      </span>
      {page > 1 && (
        <Link className="underline" href={hrefFor(page - 1)}>
          Previous
        </Link>
      )}
      {page * pageSize < total && (
        <Link className="underline" href={hrefFor(page + 1)}>
          Next
        </Link>
      )}
    </nav>
  );
}

/** Shown instead of results when a filter in the URL does not validate. */
export function LedgerFilterError({ issues }: { issues: { path: PropertyKey[]; message: string }[] }) {
  return (
    <p role="alert" className="text-sm text-red-600">
      Those filters are not valid: {issues.map((i) => `${i.path.map(String).join(".")}: ${i.message}`).join("; ")}
    </p>
  );
}
