import Link from "@/components/link";
import { stores as storesBackend } from "@/lib/stores/backend";
import { pickRememberedStore } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { MemoryEditor, type MemoryDraft } from "@/components/memory-editor";
import { MemoryHistory } from "@/components/memory-history";
import { MemoryDeleteForm, MemoryMoveForm } from "@/components/memory-manage";
import { MemoryMarkdown } from "@/components/memory-markdown";
import { UnindexableFiles } from "@/components/unindexable-files";
import { MemoryCategoryTree, MemoryFilterForm, MemorySearchForm } from "@/components/memory-filters";
import { roleAtLeast } from "@/lib/auth/users";
import { formatTime } from "@/lib/format";
import { CATEGORY_PAGE_MAX, findMemoryRedirect, memoryFilterSchema, memoryPathSchema, type MemoryRedirect, type MemoryWithBody, type TrashedMemory } from "@/lib/index/memories";
import { searchInputSchema, type SearchHit } from "@/lib/index/search";
import { isAppError } from "@/lib/errors";
import { MemoryRestoreForm } from "@/components/memory-trash";
import { getConfig } from "@/lib/config";
import { createMemoryAction, deleteMemoryAction, moveMemoryAction, restoreMemoryAction, updateMemoryAction } from "./actions";
import { PoisonFlagBadges, PoisonFlagList } from "@/components/poison-flags";
import { ItemSection } from "@/app/(dashboard)/items/item-section";
import type { Flagged } from "@/lib/poison";

const PAGE_SIZE = 25;

type Params = Record<string, string | string[] | undefined>;
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;

type Missing = { kind: "missing"; path: string; reason: string; movedTo?: MemoryRedirect | null; trashed?: TrashedMemory | null };
type Viewed = { kind: "memory"; memory: Flagged<MemoryWithBody> } | Missing | null;

/** A memory, or why there is none at that path: moved (and where to), deleted (and in the trash), or never there. */
async function loadMemory(store: string, raw: string | undefined): Promise<Viewed> {
  if (!raw) return null;
  const parsed = memoryPathSchema.safeParse(raw);
  if (!parsed.success) return { kind: "missing", path: raw, reason: "That is not a memory path (it looks like category/…/slug)." };
  try {
    return { kind: "memory", memory: await storesBackend().getMemory({ store, memoryPath: parsed.data }) };
  } catch (e) {
    if (!(isAppError(e) && e.code === "not_found")) throw e;
    const movedTo = await findMemoryRedirect({ store, memoryPath: parsed.data });
    const landed = movedTo ? await storesBackend().getMemory({ store, memoryPath: movedTo.path }).then(() => true, () => false) : false;
    // Deleted here, or moved and later deleted where it went: either way its trash entry, if it still has one.
    const deletedAt = movedTo ? (landed ? null : movedTo.path) : parsed.data;
    const trashed = deletedAt ? ((await storesBackend().listMemoryTrash({ store })).find((t) => t.path === deletedAt) ?? null) : null;
    const reason = movedTo ? (landed ? "It was moved." : `It was moved to ${movedTo.path}, and deleted there since.`) : trashed ? "It was deleted." : "It may have been moved or deleted.";
    return { kind: "missing", path: raw, reason, movedTo: landed ? movedTo : null, trashed };
  }
}

const dateOnly = (ms: number | null) => (ms === null ? "" : new Date(ms).toISOString().slice(0, 10));

function draftOf(m: MemoryWithBody): MemoryDraft {
  return { path: m.path, body: m.body, tags: m.tags.join(", "), summary: m.summary ?? "", source: m.source ?? "", expires: dateOnly(m.expires_at) };
}

/** Full-text hits of memories only (the one search entry point, kind=memory), one row per memory. */
async function searchMemories({ store, q, category, page }: { store: string; q: string; category: string | undefined; page: number }): Promise<{ hits: SearchHit[]; titles: Map<string, string>; hasMore: boolean } | { error: string }> {
  const input = searchInputSchema.safeParse({ q, mode: "fts", kind: "memory", prefix: category ? `memory/${category}/` : undefined, limit: String(PAGE_SIZE), offset: String((page - 1) * PAGE_SIZE) });
  if (!input.success) return { error: input.error.issues.map((i) => i.message).join("; ") };
  try {
    const result = await storesBackend().search({ store, input: { ...input.data, include_core: false } });
    const seen = new Set<string>();
    const hits = result.results.filter((h) => !seen.has(h.path) && seen.add(h.path));
    // Named as the search page names documents (first heading, else first line, else file name); a hit without one keeps its path.
    const titles = await storesBackend()
      .documentTitles({ store, paths: hits.map((h) => h.path) })
      .catch(() => new Map<string, string>());
    return { hits, titles, hasMore: result.has_more };
  } catch (e) {
    if (isAppError(e)) return { error: e.message };
    throw e;
  }
}

const memoryPathOfDoc = (docPath: string) => docPath.replace(/^memory\//, "").replace(/\.md$/, "");

export default async function MemoriesPage({ searchParams }: { searchParams: Promise<Params> }) {
  const user = await requireUser();
  const canEdit = roleAtLeast({ role: user.role, min: "editor" });
  const sp = await searchParams;
  // The stores of this process's backend (PostgreSQL with DATABASE_URL, never DATA_DIR's then), read through stores().
  const { store, stores } = await pickRememberedStore(one(sp.store));
  const page = Math.max(1, Math.min(10_000, Number(one(sp.page)) || 1));
  // A category belongs to the store it was picked in: after switching store it is dropped, never kept as a hidden filter.
  const categoryStore = one(sp.cstore);
  // The tree shows a page of the categories; the one asked for is looked up by itself.
  const { categories, total: categoriesTotal } = await storesBackend().listAllCategories({ store, limit: CATEGORY_PAGE_MAX });
  const askedCategory = categoryStore && categoryStore !== store ? undefined : one(sp.category);
  const category = askedCategory && (categories.some((c) => c.path === askedCategory) || (await storesBackend().getCategory({ store, path: askedCategory }).catch(() => null))) ? askedCategory : undefined;
  const unknownCategory = askedCategory && !category ? askedCategory : undefined;
  const q = one(sp.q)?.trim();
  const values = {
    store,
    category,
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
  const search = q ? await searchMemories({ store, q, category, page }) : null;
  const list = !search && parsed.success ? await storesBackend().listMemories({ store, filter: parsed.data }) : null;
  const viewed = await loadMemory(store, one(sp.path));
  const unindexable = await storesBackend().listUnindexableFiles({ store });
  // A deleted memory's history stays reachable at its path (the delete, then what came before it).
  const historyPath = viewed?.kind === "memory" ? viewed.memory.path : viewed?.kind === "missing" && viewed.trashed ? viewed.trashed.path : null;
  const history = historyPath ? await storesBackend().listMemoryHistory({ store, memoryPath: historyPath, limit: 30 }) : null;
  // Just deleted here: the trash entry to undo it with.
  const deletedId = one(sp.deleted);
  const justDeleted = deletedId ? ((await storesBackend().listMemoryTrash({ store })).find((t) => t.id === deletedId) ?? null) : null;
  const trashHref = `/memories/trash?store=${encodeURIComponent(store)}`;
  const editing = canEdit && viewed?.kind === "memory" && one(sp.edit) === "1";
  const creating = canEdit && one(sp.new) === "1";
  const base = `/memories?store=${encodeURIComponent(store)}`;
  const withCategory = category ? `${base}&category=${encodeURIComponent(category)}&cstore=${encodeURIComponent(store)}` : base;
  const viewHref = (p: string) => `${base}&path=${encodeURIComponent(p)}`;
  const pageHref = (p: number) => {
    const query = new URLSearchParams(
      Object.entries({ ...values, q: q ?? "", cstore: category ? store : "", expired: values.expired ? "1" : "", page: String(p) }).filter(([, v]) => typeof v === "string" && v !== "") as [string, string][],
    );
    return `/memories?${query}`;
  };
  const pages = list ? Math.max(1, Math.ceil(list.total / PAGE_SIZE)) : 1;
  const contentFirst = Boolean(viewed) || creating;

  return (
    // On a phone an opened memory (or the editor) comes first: the filters and the category tree follow it.
    <div className="flex flex-col gap-4">
      <div className="flex flex-wrap items-baseline gap-3">
        <h1 className="text-2xl font-semibold">Memories</h1>
        <Link href={`/stores/${store}`} className="text-sm text-blue-700 underline">
          store {store}
        </Link>
        <Link href={trashHref} className="text-sm text-blue-700 underline" data-testid="memory-trash-link">
          trash
        </Link>
        {canEdit && !creating && (
          <Link href={`${withCategory}&new=1`} className="btn ml-auto">
            New memory
          </Link>
        )}
      </div>
      {justDeleted && (
        <section role="status" aria-label="Memory deleted" className="card flex flex-wrap items-center gap-3 border-amber-300 bg-amber-50" data-testid="memory-deleted">
          <p className="text-sm">
            Deleted <span className="font-mono">{justDeleted.path}</span>. It stays in the{" "}
            <Link className="text-blue-700 underline" href={trashHref}>
              trash
            </Link>{" "}
            until {formatTime(justDeleted.purge_at)}.
          </p>
          {canEdit && <MemoryRestoreForm store={store} id={justDeleted.id} path={justDeleted.path} action={restoreMemoryAction} label="Undo" />}
        </section>
      )}
      <UnindexableFiles store={store} files={unindexable} />
      <div className={contentFirst ? "max-md:order-last" : undefined}>
        <MemoryFilterForm stores={stores} values={values} />
      </div>
      <div className="grid gap-4 md:grid-cols-[14rem_1fr]">
        <div className={contentFirst ? "max-md:order-last" : undefined}>
          <MemoryCategoryTree store={store} categories={categories} total={categoriesTotal} active={values.category} />
        </div>
        <div className="min-w-0 space-y-4">
          {creating && (
            <MemoryEditor
              store={store}
              mode="create"
              initial={{ path: category ? `${category}/` : "", body: "", tags: "", summary: "", source: "", expires: "" }}
              action={createMemoryAction}
              cancelHref={withCategory}
            />
          )}
          {viewed?.kind === "missing" && (
            <section className="card space-y-2" role="status" aria-label="Memory not found" data-testid="memory-not-found">
              <h2 className="font-semibold">No memory at {viewed.path}</h2>
              <p className="text-sm text-slate-600">
                Store {store} has no memory at <span className="font-mono">{viewed.path}</span>. {viewed.reason}
              </p>
              {viewed.movedTo && (
                <p className="text-sm" data-testid="memory-moved">
                  It is now at{" "}
                  <Link className="font-mono text-blue-700 underline" href={viewHref(viewed.movedTo.path)}>
                    {viewed.movedTo.path}
                  </Link>{" "}
                  (moved by {viewed.movedTo.actor}, {formatTime(viewed.movedTo.movedAt)}).
                </p>
              )}
              {viewed.trashed && (
                <div className="space-y-2" data-testid="memory-in-trash">
                  <p className="text-sm">
                    Deleted by {viewed.trashed.deleted_by}, {formatTime(viewed.trashed.deleted_at)}; it stays in the trash until {formatTime(viewed.trashed.purge_at)}.{" "}
                    <Link className="text-blue-700 underline" href={`${trashHref}&id=${encodeURIComponent(viewed.trashed.id)}`}>
                      Open it in the trash
                    </Link>
                  </p>
                  {canEdit && <MemoryRestoreForm store={store} id={viewed.trashed.id} path={viewed.trashed.path} action={restoreMemoryAction} />}
                </div>
              )}
              <Link href={base} className="text-sm text-blue-700 underline">
                Back to all memories in {store}
              </Link>
            </section>
          )}
          {editing && viewed?.kind === "memory" && <MemoryEditor store={store} mode="edit" initial={draftOf(viewed.memory)} action={updateMemoryAction} cancelHref={viewHref(viewed.memory.path)} />}
          {!editing && viewed?.kind === "memory" && (
            <article className="card space-y-3" aria-label={`Memory ${viewed.memory.path}`} data-testid="memory-view">
              <header className="space-y-1">
                <div className="flex flex-wrap items-start gap-2">
                  <h2 className="break-all font-mono text-sm font-semibold">{viewed.memory.path}</h2>
                  {canEdit && (
                    <Link href={`${viewHref(viewed.memory.path)}&edit=1`} className="btn-secondary ml-auto">
                      Edit
                    </Link>
                  )}
                </div>
                <p className="text-xs text-slate-500">
                  updated {formatTime(viewed.memory.updated_at)} · created {formatTime(viewed.memory.created_at)}
                  {viewed.memory.expires_at ? ` · expires ${formatTime(viewed.memory.expires_at)}` : ""}
                  {viewed.memory.source ? ` · source ${viewed.memory.source}` : ""} · ~{viewed.memory.token_estimate} tokens
                </p>
                {viewed.memory.tags.length > 0 && <p className="text-xs">tags: {viewed.memory.tags.join(", ")}</p>}
                {viewed.memory.summary && <p className="text-sm italic text-slate-600">{viewed.memory.summary}</p>}
                <PoisonFlagList flags={viewed.memory.flags} />
              </header>
              <MemoryMarkdown text={viewed.memory.body} file={`memory/${viewed.memory.path}.md`} />
              {canEdit && (
                <footer className="space-y-3 border-t border-slate-100 pt-3" aria-label="Manage memory">
                  <MemoryMoveForm store={store} path={viewed.memory.path} action={moveMemoryAction} />
                  <MemoryDeleteForm store={store} path={viewed.memory.path} action={deleteMemoryAction} />
                </footer>
              )}
            </article>
          )}
          {!editing && viewed?.kind === "memory" && <ItemSection store={store} kind="memory" id={viewed.memory.path} user={user} />}
          {history && <MemoryHistory entries={history} />}

          <MemorySearchForm store={store} category={category} q={q} />
          {unknownCategory && (
            <p role="status" className="text-sm text-slate-600" data-testid="memory-category-missing">
              Store {store} has no category <span className="font-mono">{unknownCategory}</span>; showing all memories.
            </p>
          )}
          {!parsed.success && (
            <p role="alert" className="text-sm text-red-600">
              Invalid filter: {parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}
            </p>
          )}
          {search && "error" in search && (
            <p role="alert" className="text-sm text-red-600">
              Search failed: {search.error}
            </p>
          )}
          {search && "hits" in search && (
            <section className="card space-y-2" aria-label="Memory search results" data-testid="memory-search-results">
              <p className="text-sm text-slate-600">
                {search.hits.length === 0 ? "No memory matches" : `Memories matching`} <q>{q}</q>
                {category ? ` in ${category}` : ""}
                {" · "}
                <Link className="text-blue-700 underline" href={withCategory}>
                  clear search
                </Link>
              </p>
              <ul className="space-y-2">
                {search.hits.map((h) => (
                  <li key={h.path} data-testid="memory-search-hit">
                    <p className="flex flex-wrap items-baseline gap-x-2">
                      <Link className="font-medium text-blue-700 underline" href={viewHref(memoryPathOfDoc(h.path))}>
                        {search.titles.get(h.path) ?? memoryPathOfDoc(h.path)}
                      </Link>
                      <span className="break-all font-mono text-xs text-slate-600" data-testid="memory-search-hit-path">
                        {memoryPathOfDoc(h.path)}
                      </span>
                    </p>
                    <p className="text-xs text-slate-600">{h.snippet}</p>
                  </li>
                ))}
              </ul>
              <nav aria-label="Pages" className="flex items-center gap-3 text-sm">
                {page > 1 && <Link href={pageHref(page - 1)} className="underline">Previous</Link>}
                <span>page {page}</span>
                {search.hasMore && <Link href={pageHref(page + 1)} className="underline">Next</Link>}
              </nav>
            </section>
          )}
          {list && list.total === 0 && categories.length === 0 && !values.category && (
            <section className="card space-y-2" aria-labelledby="memories-empty-heading" data-testid="memories-empty">
              <h2 id="memories-empty-heading" className="font-semibold">
                No memories in {store} yet
              </h2>
              <p className="text-sm text-slate-600">
                A memory is a markdown note (with tags, a summary, a source and an optional expiry) at a path like <span className="font-mono">projects/launch/decisions</span>: the first part is its category. Memories are searchable at once and embedded in the background.
              </p>
              <ul className="list-disc space-y-1 pl-5 text-sm text-slate-600">
                {canEdit && (
                  <li>
                    <Link className="text-blue-700 underline" href={`${base}&new=1`}>
                      Write the first memory
                    </Link>{" "}
                    here.
                  </li>
                )}
                <li>
                  Agents write them with <span className="font-mono">POST /api/v1/stores/{store}/memories</span> or the MCP tool <span className="font-mono">write_memory</span> (see{" "}
                  <Link className="text-blue-700 underline" href="/api-docs">
                    API and MCP
                  </Link>
                  ).
                </li>
                <li>
                  {storesBackend().kind === "sqlite" ? (
                    <>
                      Or put markdown files under this store&apos;s <span className="font-mono">memory/</span> folder: they are picked up by themselves (or by a reindex from the store page).
                    </>
                  ) : (
                    <>
                      Or import a folder of markdown files with <span className="font-mono">dualmind memories import</span>.
                    </>
                  )}
                </li>
                {getConfig().memoryTrashDays > 0 && (
                  <li>
                    Looking for one that was deleted? See the{" "}
                    <Link className="text-blue-700 underline" href={trashHref}>
                      trash
                    </Link>
                    .
                  </li>
                )}
              </ul>
            </section>
          )}
          {list && (
            <section className="card space-y-2" aria-label="Memory list">
              <p className="text-sm text-slate-600" data-testid="memory-count">
                {list.total} {list.total === 1 ? "memory" : "memories"}
                {values.category ? ` in ${values.category}` : ""}
                {values.category && (
                  <>
                    {" · "}
                    <Link className="text-blue-700 underline" href={base}>
                      show all
                    </Link>
                  </>
                )}
              </p>
              <div className="overflow-x-auto">
                <table tabIndex={0} className="data" data-testid="memories-table">
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
                          <PoisonFlagBadges flags={m.flags} />
                        </td>
                        <td>{m.tags.join(", ")}</td>
                        <td>{m.source ?? "—"}</td>
                        <td>{formatTime(m.updated_at)}</td>
                        <td>{m.token_estimate}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
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
