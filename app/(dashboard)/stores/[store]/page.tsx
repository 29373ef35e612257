import Link from "next/link";
import { notFound } from "next/navigation";
import { requireUser } from "@/app/_server/session";
import { StoreEmbeddingsCard } from "@/components/store-embeddings-card";
import { StoreStatusCard } from "@/components/store-status-card";
import { WorkerStateCard } from "@/components/worker-state-card";
import { getConfig } from "@/lib/config";
import { StoreVerifyCard } from "@/components/store-verify-card";
import { getEmbeddingStatus, getStoreStatus, getWorkerStates, type StoreStatus } from "@/lib/embed/status";
import { formatBytes, formatTime } from "@/lib/format";
import { listDocumentsByPrefix } from "@/lib/index/ingest";
import { listRecentMemories } from "@/lib/index/memories";
import { describeStore, openStore } from "@/lib/stores/stores";
import { CORE_STORE, DEFAULT_STORE, storeExists, storeNameSchema } from "@/lib/db/store-names";
import { StoreDeleteButton } from "@/components/store-delete-button";
import { deleteStoreAction, verifyStoreAction } from "./actions";
import { findOrNullAsync } from "@/app/_server/pages";
import { memoryFilterSchema } from "@/lib/index/memories";
import { stores, storesOnPostgres } from "@/lib/stores/backend";
import { getStorePageEmbeddingsPg } from "@/lib/metrics/store-status-pg";
import { describeEmbeddingActionAction, embeddingAdminAction } from "./embed-actions";
import { SelfRecallCard } from "@/components/self-recall-card";
import { getSelfRecall } from "@/lib/eval/self-recall";
import { evaluateStoreAction } from "./self-recall-actions";

export default async function StorePage({ params }: { params: Promise<{ store: string }> }) {
  const user = await requireUser();
  const { store } = await params;
  if (storesOnPostgres()) return <PostgresStorePage store={store} isAdmin={user.role === "admin"} />;
  if (!storeExists(store)) notFound();
  const handle = openStore({ store });
  const summary = describeStore({ handle });
  const recent = listRecentMemories({ handle, limit: 10 });
  const docs = listDocumentsByPrefix({ handle, limit: 1 });
  const status = await getStoreStatus({ handle });
  const embeddings = await getEmbeddingStatus({ handle, status });
  return (
    <div className="space-y-4">
      <StoreHeader store={store} description={summary.description} status={status} />
      <section className="card space-y-2 text-sm" aria-labelledby="store-summary-heading" data-testid="store-summary">
        <h2 id="store-summary-heading" className="text-lg font-medium">
          Index
        </h2>
        <p>
          {docs.total} documents · {summary.counts.chunks ?? 0} chunks · {summary.counts.memories ?? 0} memories · {summary.counts.categories ?? 0} categories
        </p>
        <p className="text-slate-600">
          index.db {formatBytes(summary.files.indexBytes)} · WAL {formatBytes(summary.files.walBytes)} · {summary.files.memoryFiles} memory files · schema {summary.schemaVersion ?? "—"} · created {formatTime(summary.createdAt)}
        </p>
        <p className="flex gap-3">
          <Link className="text-blue-700 underline" href={`/memories?store=${encodeURIComponent(store)}`}>
            Browse memories
          </Link>
          <Link className="text-blue-700 underline" href="/search">
            Search
          </Link>
        </p>
      </section>
      <StoreVerifyCard store={store} action={verifyStoreAction} />
      <StoreEmbeddingsCard store={store} status={embeddings} verdict={status} isAdmin={user.role === "admin"} action={embeddingAdminAction} describe={describeEmbeddingActionAction} />
      <SelfRecallCard reports={[await getSelfRecall({ store })]} isAdmin={user.role === "admin"} evaluate={evaluateStoreAction} switchModel={embeddingAdminAction} />
      <WorkerStateCard workers={getWorkerStates()} provider={status.provider} workerInServer={getConfig().embed.workerInServer} now={status.asOf} />
      <RecentMemories store={store} recent={recent} />
      {user.role === "admin" && store !== CORE_STORE && store !== DEFAULT_STORE && <StoreDeleteButton store={store} action={deleteStoreAction} />}
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

/** With DATABASE_URL: the store as PostgreSQL holds it (stores()); what is not served there yet says so. */
async function PostgresStorePage({ store, isAdmin }: { store: string; isAdmin: boolean }) {
  const name = storeNameSchema.safeParse(store);
  if (!name.success) notFound();
  const summary = await findOrNullAsync(() => stores().describeStore({ store: name.data }));
  if (!summary) notFound();
  const docs = await stores().listDocuments({ store: name.data, prefix: "", limit: 1, offset: 0 });
  const recent = await stores().listMemories({ store: name.data, filter: memoryFilterSchema.parse({ limit: 10 }) });
  const { status, embeddings, workers } = await getStorePageEmbeddingsPg({ store: name.data });
  return (
    <div className="space-y-4">
      <StoreHeader store={store} description={summary.description} status={status} />
      <section className="card space-y-2 text-sm" aria-labelledby="store-summary-heading" data-testid="store-summary">
        <h2 id="store-summary-heading" className="text-lg font-medium">
          Index
        </h2>
        <p>
          {docs.total} documents · {summary.counts.chunks ?? 0} chunks · {summary.counts.memories ?? 0} memories · {summary.counts.categories ?? 0} categories
        </p>
        <p className="text-slate-600">
          PostgreSQL schema · vectors: {summary.vectors.version ? `pgvector ${summary.vectors.version}` : "exact scan (no pgvector)"} · schema {summary.schemaVersion ?? "—"} · created {summary.createdAt === null ? "—" : formatTime(summary.createdAt)}
        </p>
        <p className="flex gap-3">
          <Link className="text-blue-700 underline" href="/search">
            Search
          </Link>
        </p>
      </section>
      <StoreVerifyCard store={store} action={verifyStoreAction} />
      <StoreEmbeddingsCard store={store} status={embeddings} verdict={status} isAdmin={isAdmin} action={embeddingAdminAction} describe={describeEmbeddingActionAction} />
      <SelfRecallCard reports={[await getSelfRecall({ store: name.data })]} isAdmin={isAdmin} evaluate={evaluateStoreAction} switchModel={embeddingAdminAction} />
      <WorkerStateCard workers={workers} provider={status.provider} workerInServer={getConfig().embed.workerInServer} now={status.asOf} />
      <RecentMemories store={store} recent={recent.memories} />
      {isAdmin && store !== CORE_STORE && store !== DEFAULT_STORE && <StoreDeleteButton store={store} action={deleteStoreAction} />}
    </div>
  );
}

/** The store's name, description and its one live status: the same head on both backends. */
function StoreHeader({ store, description, status }: { store: string; description: string | null; status: StoreStatus }) {
  return (
    <>
      <h1 className="text-2xl font-semibold">Store {store}</h1>
      {description && <p className="text-sm text-slate-600">{description}</p>}
      <StoreStatusCard status={status} />
    </>
  );
}
