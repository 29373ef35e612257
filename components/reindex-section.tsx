import { ReindexPanel, type ReindexActions } from "@/components/reindex-panel";
import { stores as storesBackend, storesOnPostgres } from "@/lib/stores/backend";

/** The Admin page's reindex card; the page checks the admin role before rendering it and passes its server actions. */
export async function ReindexSection({ start, poll, describe }: ReindexActions) {
  const onPostgres = storesOnPostgres();
  const names = await storesBackend().listStoreNames();
  return (
    <section className="card space-y-3" aria-labelledby="reindex-heading">
      <h2 id="reindex-heading" className="text-lg font-medium">
        Reindex
      </h2>
      {onPostgres ? (
        <p className="text-sm text-slate-600">Rebuild a PostgreSQL store&apos;s documents and chunks from its memories table (the truth there); documents sent by API are kept. Each reindex asks first and says what it goes over; one runs per store across replicas.</p>
      ) : (
        <p className="text-sm text-slate-600">Rebuild a store&apos;s index from its memory/ folder and source roots. Each reindex asks first and says what it goes over; the result counts memories and documents apart. Unchanged files are skipped; the write is one transaction.</p>
      )}
      <ReindexPanel stores={names} latest={await storesBackend().listLatestJobs()} start={start} poll={poll} describe={describe} />
    </section>
  );
}
