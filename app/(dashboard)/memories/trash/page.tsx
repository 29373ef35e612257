import Link from "@/components/link";
import { pickRememberedStore } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { MemoryHistory } from "@/components/memory-history";
import { MemoryMarkdown } from "@/components/memory-markdown";
import { MemoryPurgeForm, MemoryRestoreForm } from "@/components/memory-trash";
import { roleAtLeast } from "@/lib/auth/users";
import { getConfig } from "@/lib/config";
import { isAppError } from "@/lib/errors";
import { formatTime } from "@/lib/format";
import { trashIdSchema, type TrashedMemoryWithBody } from "@/lib/index/memories";
import { stores as storesBackend } from "@/lib/stores/backend";
import { purgeTrashedMemoryAction, restoreMemoryAction } from "../actions";
import { PoisonFlagBadges, PoisonFlagList } from "@/components/poison-flags";
import type { Flagged } from "@/lib/poison";

type Params = Record<string, string | string[] | undefined>;
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) || undefined;

async function loadEntry(store: string, raw: string | undefined): Promise<Flagged<TrashedMemoryWithBody> | "missing" | null> {
  if (!raw) return null;
  if (!trashIdSchema.safeParse(raw).success) return "missing";
  try {
    return await storesBackend().getTrashedMemory({ store, id: raw });
  } catch (e) {
    if (isAppError(e) && e.code === "not_found") return "missing";
    throw e;
  }
}

/** A store's deleted memories: kept for the retention, each restorable (at its path or another) and its history one click away. */
export default async function MemoryTrashPage({ searchParams }: { searchParams: Promise<Params> }) {
  const user = await requireUser();
  const canEdit = roleAtLeast({ role: user.role, min: "editor" });
  const sp = await searchParams;
  const { store } = await pickRememberedStore(one(sp.store));
  const days = getConfig().memoryTrashDays;
  const entry = await loadEntry(store, one(sp.id));
  const trash = await storesBackend().listMemoryTrash({ store });
  const history = entry && entry !== "missing" ? await storesBackend().listMemoryHistory({ store, memoryPath: entry.path, limit: 30 }) : null;
  const base = `/memories?store=${encodeURIComponent(store)}`;
  const entryHref = (id: string) => `/memories/trash?store=${encodeURIComponent(store)}&id=${encodeURIComponent(id)}`;

  return (
    <div className="flex flex-col gap-4">
      <nav aria-label="Breadcrumb" className="text-sm text-slate-600">
        <Link className="text-blue-700 underline" href={base}>
          Memories of {store}
        </Link>{" "}
        › Trash
      </nav>
      <h1 className="text-2xl font-semibold">Deleted memories</h1>
      <p className="text-sm text-slate-600">
        {days > 0
          ? `A deleted memory stays here for ${days} day${days === 1 ? "" : "s"} (DUALMIND_MEMORY_TRASH_DAYS), then it is purged. Restore puts it back exactly as it was, with its history.`
          : "This installation keeps no deleted memories (DUALMIND_MEMORY_TRASH_DAYS=0): a delete is for good."}
      </p>
      {entry === "missing" && (
        <p role="status" className="text-sm text-slate-600" data-testid="trash-entry-missing">
          That deleted memory is no longer in the trash of {store}: it was restored or purged. Its history stays in the audit log.
        </p>
      )}
      {entry && entry !== "missing" && (
        <article className="card space-y-3" aria-label={`Deleted memory ${entry.path}`} data-testid="trash-entry">
          <header className="space-y-1">
            <h2 className="break-all font-mono text-sm font-semibold">{entry.path}</h2>
            <p className="text-xs text-slate-600">
              deleted by {entry.deleted_by} · {formatTime(entry.deleted_at)} · purged {formatTime(entry.purge_at)} · ~{entry.token_estimate} tokens
            </p>
            {entry.tags.length > 0 && <p className="text-xs">tags: {entry.tags.join(", ")}</p>}
            {entry.summary && <p className="text-sm italic text-slate-600">{entry.summary}</p>}
            <PoisonFlagList flags={entry.flags} />
          </header>
          <MemoryMarkdown text={entry.body} file={`memory/${entry.path}.md`} />
          {canEdit && (
            <footer className="flex flex-wrap items-start gap-3 border-t border-slate-100 pt-3" aria-label="Restore or purge">
              <MemoryRestoreForm store={store} id={entry.id} path={entry.path} action={restoreMemoryAction} />
              <MemoryPurgeForm store={store} id={entry.id} path={entry.path} action={purgeTrashedMemoryAction} />
            </footer>
          )}
        </article>
      )}
      {history && <MemoryHistory entries={history} />}
      <section className="card space-y-2" aria-label="Trash">
        <p className="text-sm text-slate-600" data-testid="trash-count">
          {trash.length === 0 ? `The trash of ${store} is empty.` : `${trash.length} deleted ${trash.length === 1 ? "memory" : "memories"} in ${store}, newest first.`}
        </p>
        {trash.length > 0 && (
          <div className="overflow-x-auto">
            <table tabIndex={0} className="data" data-testid="trash-table">
              <thead>
                <tr>
                  <th>Path</th>
                  <th>Deleted</th>
                  <th>By</th>
                  <th>Purged</th>
                </tr>
              </thead>
              <tbody>
                {trash.map((t) => (
                  <tr key={t.id}>
                    <td>
                      <Link className="font-mono text-blue-700 underline" href={entryHref(t.id)}>
                        {t.path}
                      </Link>
                      {t.summary && <div className="text-xs text-slate-600">{t.summary}</div>}
                      <PoisonFlagBadges flags={t.flags} />
                    </td>
                    <td>{formatTime(t.deleted_at)}</td>
                    <td className="font-mono text-xs">{t.deleted_by}</td>
                    <td>{formatTime(t.purge_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </div>
  );
}
