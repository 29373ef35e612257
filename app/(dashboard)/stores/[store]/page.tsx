import Link from "@/components/link";
import { notFound } from "next/navigation";
import { requireUser } from "@/app/_server/session";
import { StoreEmbeddingsCard } from "@/components/store-embeddings-card";
import { StoreStatusCard } from "@/components/store-status-card";
import { WorkerStateCard } from "@/components/worker-state-card";
import { StoreVerifyCard } from "@/components/store-verify-card";
import { formatBytes, formatTime } from "@/lib/format";
import { CORE_STORE, DEFAULT_STORE } from "@/lib/db/store-names";
import { StoreDeleteButton } from "@/components/store-delete-button";
import { loadStorePage, storageFacts, vectorEngineLabel } from "@/lib/metrics/dashboard-views";
import { StoreArchiveButton } from "@/components/store-archive-button";
import { archiveStoreAction, deleteStoreAction, verifyStoreAction } from "./actions";
import { describeEmbeddingActionAction, embeddingAdminAction } from "./embed-actions";
import { SelfRecallCard } from "@/components/self-recall-card";
import { getSelfRecall } from "@/lib/eval/self-recall";
import { evaluateStoreAction } from "./self-recall-actions";

export default async function StorePage({ params }: { params: Promise<{ store: string }> }) {
  const user = await requireUser();
  const { store } = await params;
  const page = await loadStorePage({ store });
  if (!page) notFound();
  const { info, status } = page;
  const storage = storageFacts(info);
  const vectors = vectorEngineLabel(info);
  const isAdmin = user.role === "admin";
  return (
    <div className="space-y-4">
      <h1 className="text-2xl font-semibold">Store {store}</h1>
      {info.archived && (
        <p role="status" className="text-sm text-amber-800" data-testid="store-archived">
          Archived: read-only. Writes are refused (store_archived) until an admin unarchives it.
        </p>
      )}
      {info.description && <p className="text-sm text-slate-600">{info.description}</p>}
      <StoreStatusCard headline={page.headline} />
      <section className="card space-y-2 text-sm" aria-labelledby="store-summary-heading" data-testid="store-summary">
        <h2 id="store-summary-heading" className="text-lg font-medium">
          Index
        </h2>
        <p>
          {page.documents} documents · {info.counts.chunks ?? 0} chunks · {info.counts.memories ?? 0} memories · {info.counts.categories ?? 0} categories
        </p>
        <p className="text-slate-600">
          {storage.bytes === null ? storage.where : `${storage.where} ${formatBytes(storage.bytes)}`}
          {storage.walBytes !== null && ` · WAL ${formatBytes(storage.walBytes)}`}
          {storage.memoryFiles !== null && ` · ${storage.memoryFiles} memory files`} · vectors: <span title={vectors.title ?? undefined}>{vectors.text}</span> · schema {info.schema_version ?? "—"} · created{" "}
          {info.created_at === null ? "—" : formatTime(info.created_at)}
        </p>
        <p className="flex gap-3">
          <Link className="text-blue-700 underline" href={`/memories?store=${encodeURIComponent(store)}`}>
            Browse memories
          </Link>
          <Link className="text-blue-700 underline" href="/search">
            Search
          </Link>
          <Link className="text-blue-700 underline" href={`/stores/${encodeURIComponent(store)}/forgetting`}>
            Forgetting
          </Link>
          <Link className="text-blue-700 underline" href={`/stores/${encodeURIComponent(store)}/review`}>
            Review queue
          </Link>
        </p>
      </section>
      <StoreVerifyCard store={store} action={verifyStoreAction} />
      <StoreEmbeddingsCard store={store} status={page.embeddings} verdict={status} isAdmin={isAdmin} action={embeddingAdminAction} describe={describeEmbeddingActionAction} />
      <SelfRecallCard reports={[await getSelfRecall({ store })]} isAdmin={isAdmin} evaluate={evaluateStoreAction} switchModel={embeddingAdminAction} />
      <WorkerStateCard workers={page.workers} provider={status.provider} workerInServer={page.workerInServer} now={status.asOf} />
      <RecentMemories store={store} recent={page.recent} />
      {isAdmin && store !== CORE_STORE && store !== DEFAULT_STORE && <StoreArchiveButton store={store} archived={info.archived} action={archiveStoreAction} />}
      {isAdmin && store !== CORE_STORE && store !== DEFAULT_STORE && <StoreDeleteButton store={store} action={deleteStoreAction} />}
    </div>
  );
}

function RecentMemories({ store, recent }: { store: string; recent: { path: string; updatedAt: number }[] }) {
  return (
    <section className="card space-y-2" aria-labelledby="recent-heading">
      <h2 id="recent-heading" className="text-lg font-medium">
        Recent memories
      </h2>
      {recent.length === 0 ? (
        <p className="text-sm text-slate-600">No memories yet.</p>
      ) : (
        <ul className="space-y-1 text-sm">
          {recent.map((m) => (
            <li key={m.path}>
              <Link className="font-mono text-blue-700 underline" href={`/memories?store=${encodeURIComponent(store)}&path=${encodeURIComponent(m.path)}`}>
                {m.path}
              </Link>{" "}
              <span className="text-xs text-slate-500">{formatTime(m.updatedAt)}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
