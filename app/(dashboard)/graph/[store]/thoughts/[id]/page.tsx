import Link from "@/components/link";
import { notFound } from "next/navigation";
import { LedgerSection } from "@/components/ledger-section";
import { formatTime } from "@/lib/format";
import { findOrNullAsync } from "@/app/_server/pages";
import { graphBackend } from "@/lib/graph/backend";
import type { Thought } from "@/lib/graph/thoughts";
import { graphStoreOr404 } from "../../../load";
import { requireUser } from "@/app/_server/session";
import { uuidSchema } from "@/lib/common";
import { ItemSection } from "@/app/(dashboard)/items/item-section";
import { PoisonFlagList } from "@/components/poison-flags";

type Props = { params: Promise<{ store: string; id: string }> };

const score = (x: number | null) => (x === null ? "—" : x.toFixed(3));

async function loadThought(store: string, raw: string): Promise<Thought | null> {
  const id = uuidSchema.safeParse(raw);
  return id.success ? findOrNullAsync(() => graphBackend().getThought({ store, id: id.data })) : null;
}

export default async function ThoughtPage({ params }: Props) {
  const user = await requireUser();
  const p = await params;
  const store = await graphStoreOr404(p.store);
  const thought = await loadThought(store, p.id);
  if (!thought) notFound();
  const uses = await graphBackend().listEvidenceUses({ store, thoughtId: thought.id });
  const base = `/graph/${encodeURIComponent(store)}`;
  const facts: [string, React.ReactNode][] = [
    ["framework", thought.framework],
    ["chain", thought.chain_id ? <Link href={`${base}/thoughts?chain_id=${encodeURIComponent(thought.chain_id)}`} className="underline">{`${thought.chain_id} #${thought.thought_number}${thought.total_thoughts ? ` of ${thought.total_thoughts}` : ""}`}</Link> : "—"],
    ["when", formatTime(thought.timestamp)],
    ["by", thought.created_by],
    ["importance", score(thought.importance)],
    ["relevance", score(thought.relevance)],
    ["novelty", thought.embedding === "pending" ? "pending (vector not yet written)" : score(thought.novelty)],
    ["consistency", score(thought.consistency)],
    ["utility", `${score(thought.utility)} (${thought.feedback_count} feedback)`],
    ["category", thought.category ?? "—"],
    ["tags", thought.tags.join(", ") || "—"],
  ];
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href={`${base}/thoughts`} className="text-sm underline">
          ← Thoughts · {store}
        </Link>
        <h1 className="text-2xl font-semibold">Thought</h1>
      </div>
      <ItemSection store={store} kind="thought" id={thought.id} user={user} />
      <PoisonFlagList flags={thought.flags} />
      <LedgerSection id="thought-heading" title="Content">
        <p className="whitespace-pre-wrap" data-testid="thought-content">
          {thought.content}
        </p>
        <dl className="grid grid-cols-[max-content_1fr] gap-x-4 gap-y-1 text-sm">
          {facts.map(([k, v]) => (
            <div key={k} className="contents">
              <dt className="font-medium text-slate-600">{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      </LedgerSection>
      <LedgerSection id="evidence-for-heading" title="Evidence for">
        {uses.length === 0 ? (
          <p className="text-sm text-slate-600">Not linked to any frame or relation.</p>
        ) : (
          <ul className="space-y-1 text-sm">
            {uses.map((u) => (
              <li key={`${u.target}:${u.target_id}`}>
                {u.stance === "contradicts" && <span className="mr-1 rounded bg-red-100 px-1 text-xs text-red-800">contradicts</span>}
                <Link href={`${base}/nodes/${u.node_id}`} className="underline">
                  {u.node_name}
                </Link>{" "}
                — {u.label}
              </li>
            ))}
          </ul>
        )}
      </LedgerSection>
    </div>
  );
}
