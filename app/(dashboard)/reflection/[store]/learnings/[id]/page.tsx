import Link from "@/components/link";
import { notFound } from "next/navigation";
import { findOrNullAsync, requestTime } from "@/app/_server/pages";
import { requireUser } from "@/app/_server/session";
import { CopyButton } from "@/components/copy-button";
import { LedgerSection } from "@/components/ledger-section";
import { TimeAgo } from "@/components/time-ago";
import { formatDecimal, formatQuantity } from "@/lib/format";
import { recallBackend } from "@/lib/recall/backend";
import { Fields } from "../../../_parts/fields";
import { reflectionHref } from "../../../_parts/links";
import { intIdOr404, reflectionStoreOr404 } from "../../../_parts/load";
import { RecallList } from "../../../_parts/recall-list";
import { ItemSection } from "@/app/(dashboard)/items/item-section";
import { PoisonFlagList } from "@/components/poison-flags";

type Props = { params: Promise<{ store: string; id: string }> };

/** One learning as fields (predicate, arguments, description, confidence), and the recalls that brought it back. */
export default async function LearningPage({ params }: Props) {
  const user = await requireUser();
  const p = await params;
  const store = await reflectionStoreOr404(p.store);
  const id = intIdOr404(p.id);
  const learning = await findOrNullAsync(() => recallBackend().getLearning({ store, id }));
  if (!learning) notFound();
  const now = requestTime();
  const recalls = await recallBackend().listRecallsReturning({ store, artifact: "learning", refId: learning.id });
  const args = Object.entries(learning.args);
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href={reflectionHref.page(store)} className="text-sm underline">
          ← Reflection · {store}
        </Link>
        <h1 className="text-2xl font-semibold">
          Learning #{learning.id}: {learning.predicate}
        </h1>
      </div>
      <ItemSection store={store} kind="learning" id={String(learning.id)} user={user} />
      <PoisonFlagList flags={learning.flags} />
      <LedgerSection id="learning-fields" title="What was learned" testId="learning-fields">
        <Fields
          rows={[
            ["Predicate", learning.predicate],
            [
              "Arguments",
              args.length ? (
                <dl key="args" className="grid grid-cols-[auto_1fr] gap-x-3 text-xs">
                  {args.map(([k, v]) => (
                    <div key={k} className="contents">
                      <dt className="font-mono text-slate-500">{k}</dt>
                      <dd className="break-words font-mono">{JSON.stringify(v)}</dd>
                    </div>
                  ))}
                </dl>
              ) : (
                "—"
              ),
            ],
            ["Description", learning.description || "—"],
            ["Confidence", formatDecimal(learning.confidence, 2)],
          ]}
        />
      </LedgerSection>
      <LedgerSection id="learning-record" title="Record" testId="learning-record">
        <Fields
          rows={[
            ["Agent", learning.agent_id],
            ["Seen", formatQuantity(learning.seen_count, "time")],
            ["First seen", <TimeAgo key="first" ms={learning.created_at} now={now} showAbsolute />],
            ["Last seen", <TimeAgo key="last" ms={learning.last_seen_at} now={now} showAbsolute />],
            ["Vector", learning.vector ? `${learning.vector.fingerprint_id} · ${learning.vector.dim} dims` : "pending"],
            [
              "Semantic handle",
              <span key="handle" className="flex flex-wrap items-start gap-2">
                <code className="min-w-0 flex-1 break-words text-xs">{learning.semantic_handle}</code>
                <CopyButton value={learning.semantic_handle} label="Copy handle" />
              </span>,
            ],
          ]}
        />
      </LedgerSection>
      <LedgerSection id="learning-recalls" title={`Recalls that returned it (${recalls.length})`} testId="learning-recalls">
        <RecallList store={store} recalls={recalls} now={now} />
      </LedgerSection>
    </div>
  );
}
