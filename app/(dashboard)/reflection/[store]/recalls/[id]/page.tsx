import Link from "@/components/link";
import { notFound } from "next/navigation";
import { findOrNullAsync, requestTime } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { LedgerSection } from "@/components/ledger-section";
import { TimeAgo } from "@/components/time-ago";
import { formatDecimal, formatDuration, formatQuantity } from "@/lib/format";
import { recallBackend } from "@/lib/recall/backend";
import { Fields } from "../../../_parts/fields";
import { reflectionHref } from "../../../_parts/links";
import { intIdOr404, reflectionStoreOr404 } from "../../../_parts/load";
import { RecallHits } from "../../../_parts/recall-list";

type Props = { params: Promise<{ store: string; id: string }> };

/** One recall: what was asked, how it was answered, and the hits, each linked to the trace or learning it found. */
export default async function RecallPage({ params }: Props) {
  await requireUser();
  const p = await params;
  const store = await reflectionStoreOr404(p.store);
  const id = intIdOr404(p.id);
  const recall = await findOrNullAsync(() => recallBackend().getRecall({ store, id }));
  if (!recall) notFound();
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href={reflectionHref.page(store)} className="text-sm underline">
          ← Reflection · {store}
        </Link>
        <h1 className="text-2xl font-semibold">Recall #{recall.id}</h1>
      </div>
      <LedgerSection id="recall-fields" title="Asked" testId="recall-fields">
        <Fields
          rows={[
            ["Query", recall.query],
            ["Agent", recall.agentId],
            ["When", <TimeAgo key="when" ms={recall.createdAt} now={requestTime()} showAbsolute />],
            ["Mode", recall.fallbackReason ? `${recall.mode} (fell back: ${recall.fallbackReason})` : recall.mode],
            ["Latency", `${formatDuration(recall.latencyMs)}${recall.cacheHit ? " (query embedding cached)" : ""}`],
            ["Top score", recall.topScore === null ? "—" : formatDecimal(recall.topScore, 3)],
            ["Past-failure warning", recall.warning ? "yes" : "no"],
          ]}
        />
      </LedgerSection>
      <LedgerSection id="recall-hits" title={formatQuantity(recall.hits.length, "hit")} testId="recall-hits">
        <RecallHits store={store} recall={recall} />
      </LedgerSection>
    </div>
  );
}
