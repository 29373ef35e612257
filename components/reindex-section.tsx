import { ReindexPanel, type ReindexActions } from "@/components/reindex-panel";
import { stores as storesBackend } from "@/lib/stores/backend";
import { reindexExplanation } from "@/lib/metrics/dashboard-views";

/** The Admin page's reindex card; the page checks the admin role before rendering it and passes its server actions. */
export async function ReindexSection({ start, poll, describe }: ReindexActions) {
  const names = await storesBackend().listStoreNames();
  return (
    <section className="card space-y-3" aria-labelledby="reindex-heading">
      <h2 id="reindex-heading" className="text-lg font-medium">
        Reindex
      </h2>
      <p className="text-sm text-slate-600">{reindexExplanation()}</p>
      <ReindexPanel stores={names} latest={await storesBackend().listLatestJobs()} start={start} poll={poll} describe={describe} />
    </section>
  );
}
