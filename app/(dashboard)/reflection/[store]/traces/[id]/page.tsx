import Link from "@/components/link";
import { notFound } from "next/navigation";
import { findOrNullAsync, requestTime } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { CopyButton } from "@/components/copy-button";
import { LedgerSection } from "@/components/ledger-section";
import { TimeAgo } from "@/components/time-ago";
import { formatQuantity } from "@/lib/format";
import { recallBackend } from "@/lib/recall/backend";
import { Chips, Fields, OutcomeBadge } from "../../../_parts/fields";
import { reflectionHref } from "../../../_parts/links";
import { intIdOr404, reflectionStoreOr404 } from "../../../_parts/load";
import { RecallList } from "../../../_parts/recall-list";
import { ItemSection } from "@/app/(dashboard)/items/item-section";
import { PoisonFlagList } from "@/components/poison-flags";

type Props = { params: Promise<{ store: string; id: string }> };

/** One trace as fields (intent, files, outcome, key issue, tags), and the recalls that brought it back. */
export default async function TracePage({ params }: Props) {
  const user = await requireUser();
  const p = await params;
  const store = await reflectionStoreOr404(p.store);
  const id = intIdOr404(p.id);
  const trace = await findOrNullAsync(() => recallBackend().getTrace({ store, id }));
  if (!trace) notFound();
  const now = requestTime();
  const recalls = await recallBackend().listRecallsReturning({ store, artifact: "trace", refId: trace.id });
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href={reflectionHref.page(store)} className="text-sm underline">
          ← Reflection · {store}
        </Link>
        <h1 className="flex flex-wrap items-center gap-2 text-2xl font-semibold">
          Trace #{trace.id} <OutcomeBadge outcome={trace.outcome} />
        </h1>
      </div>
      <ItemSection store={store} kind="trace" id={String(trace.id)} user={user} />
      <PoisonFlagList flags={trace.flags} />
      <LedgerSection id="trace-fields" title="What happened" testId="trace-fields">
        <Fields
          rows={[
            [
              "Intent",
              <span key="intent">
                <span className="font-medium">{trace.intent.verb}</span> {trace.intent.target}
              </span>,
            ],
            ["Shard", trace.shard_type || "—"],
            [
              "Files",
              trace.key_files.length ? (
                <ul key="files" className="space-y-0.5 font-mono text-xs">
                  {trace.key_files.map((f) => (
                    <li key={f}>{f}</li>
                  ))}
                </ul>
              ) : (
                "—"
              ),
            ],
            ["Outcome", <OutcomeBadge key="outcome" outcome={trace.outcome} />],
            ["Key issue", trace.key_issue || "—"],
            ["Tags", <Chips key="tags" items={trace.error_tags} />],
          ]}
        />
      </LedgerSection>
      <LedgerSection id="trace-record" title="Record" testId="trace-record">
        <Fields
          rows={[
            ["Agent", trace.agent_id],
            ["Seen", formatQuantity(trace.seen_count, "time")],
            ["First seen", <TimeAgo key="first" ms={trace.created_at} now={now} showAbsolute />],
            ["Last seen", <TimeAgo key="last" ms={trace.last_seen_at} now={now} showAbsolute />],
            ["Vector", trace.vector ? `${trace.vector.fingerprint_id} · ${trace.vector.dim} dims` : trace.embedding === "skipped_backpressure" ? "none (stored under backpressure; found lexically)" : "pending"],
            [
              "Descriptor",
              <span key="descriptor" className="flex flex-wrap items-start gap-2">
                <code className="min-w-0 flex-1 break-words text-xs">{trace.summary_descriptor}</code>
                <CopyButton value={trace.summary_descriptor} label="Copy descriptor" />
              </span>,
            ],
            ["Descriptor hash", <code key="hash" className="break-all text-xs">{trace.descriptor_hash}</code>],
          ]}
        />
      </LedgerSection>
      <LedgerSection id="trace-recalls" title={`Recalls that returned it (${recalls.length})`} testId="trace-recalls">
        <RecallList store={store} recalls={recalls} now={now} />
      </LedgerSection>
    </div>
  );
}
