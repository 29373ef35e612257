import Link from "@/components/link";
import type { CategoryChild } from "@/lib/index/memories";

/** Category tree as nested links; counts include sub-categories. */
export function MemoryCategoryTree({ store, categories, total, active }: { store: string; categories: CategoryChild[]; total: number; active: string | undefined }) {
  // `cstore` ties the category to this store: after a store switch the page drops it instead of filtering the new store by it.
  const href = (category?: string) => `/memories?store=${encodeURIComponent(store)}${category ? `&category=${encodeURIComponent(category)}&cstore=${encodeURIComponent(store)}` : ""}`;
  return (
    <nav aria-label="Categories" className="card space-y-1 text-sm" data-testid="category-tree">
      <Link href={href()} className={`block ${active ? "text-slate-700" : "font-semibold"}`}>
        All memories
      </Link>
      {categories.map((c) => (
        <Link
          key={c.path}
          href={href(c.path)}
          title={c.description ?? undefined}
          aria-current={active === c.path ? "page" : undefined}
          className={`block truncate ${active === c.path ? "font-semibold" : "text-slate-700 hover:underline"}`}
          style={{ paddingLeft: `${(c.path.split("/").length - 1) * 0.75 + 0.25}rem` }}
        >
          {c.name} <span className="text-xs text-slate-500">({c.memories})</span>
        </Link>
      ))}
      {total > categories.length && (
        <p className="text-xs text-slate-500" data-testid="category-tree-more">
          The first {categories.length} of {total} categories; filter by a category path to reach the others.
        </p>
      )}
    </nav>
  );
}

export type MemoryFilterValues = { store: string; category?: string; tags?: string; source?: string; after?: string; before?: string; sort: string; order: string; expired: boolean };

/** A plain GET form: filters live in the URL, so a filtered view can be bookmarked and shared. */
export function MemoryFilterForm({ stores, values }: { stores: string[]; values: MemoryFilterValues }) {
  return (
    <form method="get" action="/memories" className="card grid gap-2 sm:grid-cols-4" aria-label="Memory filters">
      <div>
        <label className="label" htmlFor="mf-store">Store</label>
        <select id="mf-store" className="input" name="store" defaultValue={values.store}>
          {stores.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </div>
      <div>
        <label className="label" htmlFor="mf-tags">Tags (any)</label>
        <input id="mf-tags" className="input" name="tags" defaultValue={values.tags} placeholder="ops, sqlite" />
      </div>
      <div>
        <label className="label" htmlFor="mf-source">Source</label>
        <input id="mf-source" className="input" name="source" defaultValue={values.source} />
      </div>
      <div>
        <label className="label" htmlFor="mf-sort">Sort</label>
        <div className="flex gap-1">
          <select id="mf-sort" className="input" name="sort" defaultValue={values.sort}>
            <option value="updated_at">updated</option>
            <option value="created_at">created</option>
            <option value="token_estimate">size (tokens)</option>
          </select>
          <select className="input" name="order" aria-label="Order" defaultValue={values.order}>
            <option value="desc">desc</option>
            <option value="asc">asc</option>
          </select>
        </div>
      </div>
      <div>
        <label className="label" htmlFor="mf-after">Updated after</label>
        <input id="mf-after" className="input" type="date" name="after" defaultValue={values.after} />
      </div>
      <div>
        <label className="label" htmlFor="mf-before">Updated before</label>
        <input id="mf-before" className="input" type="date" name="before" defaultValue={values.before} />
      </div>
      <label className="flex items-end gap-2 text-sm">
        <input type="checkbox" name="expired" value="1" defaultChecked={values.expired} /> include expired
      </label>
      {values.category && (
        <>
          <input type="hidden" name="category" value={values.category} />
          <input type="hidden" name="cstore" value={values.store} />
        </>
      )}
      <div className="flex items-end">
        <button className="btn w-full justify-center">Apply filters</button>
      </div>
    </form>
  );
}

/** Full-text search inside the store's memories (within the chosen category, when there is one). */
export function MemorySearchForm({ store, category, q }: { store: string; category: string | undefined; q: string | undefined }) {
  return (
    <form method="get" action="/memories" role="search" aria-label="Search memories" className="flex gap-2">
      <input type="hidden" name="store" value={store} />
      {category && (
        <>
          <input type="hidden" name="category" value={category} />
          <input type="hidden" name="cstore" value={store} />
        </>
      )}
      <input className="input" type="search" name="q" defaultValue={q} maxLength={2000} placeholder={category ? `search memories in ${category}` : "search memories"} aria-label="Search text" />
      <button className="btn-secondary">Search</button>
    </form>
  );
}
