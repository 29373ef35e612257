import { ReindexPanel, type ReindexActions } from "@/components/reindex-panel";
import { listLatestJobs } from "@/lib/index/jobs";
import { listStoreNames } from "@/lib/db/store-names";

/** The Admin page's reindex card; the page checks the admin role before rendering it and passes its server actions. */
export function ReindexSection({ start, poll, describe }: ReindexActions) {
  return (
    <section className="card space-y-3" aria-labelledby="reindex-heading">
      <h2 id="reindex-heading" className="text-lg font-medium">
        Reindex
      </h2>
      <p className="text-sm text-slate-600">Rebuild a store&apos;s index from its memory/ folder and source roots. Each reindex asks first and says what it goes over; the result counts memories and documents apart. Unchanged files are skipped; the write is one transaction.</p>
      <ReindexPanel stores={listStoreNames()} latest={listLatestJobs()} start={start} poll={poll} describe={describe} />
    </section>
  );
}
