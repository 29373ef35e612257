import Link from "next/link";
import { pickStore } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { MemoryMarkdown } from "@/components/memory-markdown";
import { MemoryCategoryTree, MemoryFilterForm } from "@/components/memory-filters";
import { formatTime } from "@/lib/format";
import { getMemoryByPath, listAllCategories, listMemoriesByFilter, memoryFilterSchema, memoryPathSchema } from "@/lib/index/memories";
import { openStore } from "@/lib/stores/stores";
import { isAppError } from "@/lib/errors";

const PAGE_SIZE = 25;

type Params = Record<string, string | string[] | undefined>;
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;

export default async function MemoriesPage({ searchParams }: { searchParams: Promise<Params> }) {
  await requireUser();
  const sp = await searchParams;
  const { store, stores } = pickStore(one(sp.store));
  const handle = openStore({ store });
  const page = Math.max(1, Number(one(sp.page)) || 1);
  const values = {
    store,
    category: one(sp.category),
    tags: one(sp.tags),
    source: one(sp.source),
    after: one(sp.after),
    before: one(sp.before),
    sort: one(sp.sort) ?? "updated_at",
    order: one(sp.order) ?? "desc",
    expired: one(sp.expired) === "1",
  };
  const parsed = memoryFilterSchema.safeParse({
    category: values.category,
    tags: values.tags,
    source: values.source,
    updated_after: values.after,
    updated_before: values.before,
    sort: values.sort,
    order: values.order,
    include_expired: values.expired ? "true" : undefined,
    limit: String(PAGE_SIZE),
    offset: String((page - 1) * PAGE_SIZE),
  });
  const list = parsed.success ? listMemoriesByFilter({ handle, filter: parsed.data }) : null;
  const categories = listAllCategories({ handle });
  const viewPath = one(sp.path);
  let viewed: ReturnType<typeof getMemoryByPath> | null = null;
  let viewError: string | null = null;
  if (viewPath) {
    try {
      viewed = getMemoryByPath({ handle, memoryPath: memoryPathSchema.parse(viewPath) });
    } catch (e) {
      viewError = isAppError(e) ? e.message : "that memory path is not valid";
    }
  }
  const pageHref = (p: number) => {
    const q = new URLSearchParams(Object.entries({ ...values, expired: values.expired ? "1" : "", page: String(p) }).filter(([, v]) => typeof v === "string" && v !== "") as [string, string][]);
    return `/memories?${q}`;
  };
  const pages = list ? Math.max(1, Math.ceil(list.total / PAGE_SIZE)) : 1;

  return (
    <div className="space-y-4">
      <div className="flex items-baseline gap-3">
        <h1 className="text-2xl font-semibold">Memories</h1>
        <Link href={`/stores/${store}`} className="text-sm text-blue-700 underline">
          store {store}
        </Link>
      </div>
      <MemoryFilterForm stores={stores} values={values} />
      <div className="grid gap-4 md:grid-cols-[14rem_1fr]">
        <MemoryCategoryTree store={store} categories={categories} active={values.category} />
        <div className="space-y-4">
          {viewed && (
            <article className="card space-y-3" aria-label={`Memory ${viewed.path}`} data-testid="memory-view">
              <header className="space-y-1">
                <h2 className="font-mono text-sm font-semibold">{viewed.path}</h2>
                <p className="text-xs text-slate-500">
                  updated {formatTime(viewed.updatedAt)} · created {formatTime(viewed.createdAt)}
                  {viewed.expiresAt ? ` · expires ${formatTime(viewed.expiresAt)}` : ""}
                  {viewed.source ? ` · source ${viewed.source}` : ""} · ~{viewed.tokenEstimate} tokens
                </p>
                {viewed.tags.length > 0 && <p className="text-xs">tags: {viewed.tags.join(", ")}</p>}
                {viewed.summary && <p className="text-sm italic text-slate-600">{viewed.summary}</p>}
              </header>
              <MemoryMarkdown text={viewed.body} file={`memory/${viewed.path}.md`} />
            </article>
          )}
          {viewError && <p role="alert" className="text-sm text-red-600">{viewError}</p>}
          {!parsed.success && (
            <p role="alert" className="text-sm text-red-600">
              Invalid filter: {parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}
            </p>
          )}
          {list && (
            <section className="card space-y-2" aria-label="Memory list">
              <p className="text-sm text-slate-600" data-testid="memory-count">
                {list.total} memories{values.category ? ` in ${values.category}` : ""}
              </p>
              <table className="data" data-testid="memories-table">
                <thead>
                  <tr>
                    <th>Path</th>
                    <th>Tags</th>
                    <th>Source</th>
                    <th>Updated</th>
                    <th>Tokens</th>
                  </tr>
                </thead>
                <tbody>
                  {list.memories.map((m) => (
                    <tr key={m.path}>
                      <td>
                        <Link className="font-mono text-blue-700 underline" href={`${pageHref(page)}&path=${encodeURIComponent(m.path)}`}>
                          {m.path}
                        </Link>
                        {m.summary && <div className="text-xs text-slate-500">{m.summary}</div>}
                      </td>
                      <td>{m.tags.join(", ")}</td>
                      <td>{m.source ?? "—"}</td>
                      <td>{formatTime(m.updatedAt)}</td>
                      <td>{m.tokenEstimate}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <nav aria-label="Pages" className="flex items-center gap-3 text-sm">
                {page > 1 && <Link href={pageHref(page - 1)} className="underline">Previous</Link>}
                <span>
                  page {page} of {pages}
                </span>
                {page < pages && <Link href={pageHref(page + 1)} className="underline">Next</Link>}
              </nav>
            </section>
          )}
        </div>
      </div>
    </div>
  );
}
