import Link from "@/components/link";
import { notFound } from "next/navigation";
import { GraphEvidenceList } from "@/components/graph-evidence-list";
import { GraphNeighbourhood } from "@/components/graph-neighbourhood";
import { LedgerSection } from "@/components/ledger-section";
import { FRAME_COLUMNS } from "@/lib/db/schema/graph";
import { formatTime } from "@/lib/format";
import { graphBackend } from "@/lib/graph/backend";
import type { NodeDetail } from "@/lib/graph/node-detail";
import { graphStoreOr404 } from "../../../load";
import { requireUser } from "@/app/_server/session";
import { findOrNullAsync } from "@/app/_server/pages";
import { uuidSchema } from "@/lib/common";
import { ItemSection } from "@/app/(dashboard)/items/item-section";
import { PoisonFlagBadges, PoisonFlagList } from "@/components/poison-flags";

type Props = { params: Promise<{ store: string; id: string }> };

/** One line when a list holds fewer than there are (the detail is bounded: NODE_DETAIL_LIMITS). */
function Shown({ shown, total, what }: { shown: number; total: number; what: string }) {
  if (shown >= total) return null;
  return (
    <p className="text-sm text-slate-600" data-testid="shown-of-total">
      Showing {shown} of {total} {what}.
    </p>
  );
}

function RelationTable({ title, id, rows, total, base }: { title: string; id: string; rows: NodeDetail["outgoing"]; total: number; base: string }) {
  return (
    <LedgerSection id={id} title={title} testId={id}>
      <Shown shown={rows.length} total={total} what="relations, the heaviest first" />
      {rows.length === 0 ? (
        <p className="text-sm text-slate-600">None.</p>
      ) : (
        <table tabIndex={0} className="data">
          <thead>
            <tr>
              <th>Relation</th>
              <th>Node</th>
              <th>Weight</th>
              <th>Confidence</th>
              <th>Evidence</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>
                  {r.relationship_type}
                  {r.bidirectional && <span className="ml-1 text-xs text-slate-500">(both ways)</span>} <PoisonFlagBadges flags={r.flags} />
                </td>
                <td>
                  <Link href={`${base}/nodes/${r.other.id}`} className="underline">
                    {r.other.display_name}
                  </Link>
                </td>
                <td data-testid="relation-weight">{r.weight.toFixed(2)}</td>
                <td>{r.confidence.toFixed(2)}</td>
                <td>
                  <GraphEvidenceList evidence={r.evidence} base={base} />
                  <Shown shown={r.evidence.length} total={r.evidence_total} what="evidence links, the oldest first" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </LedgerSection>
  );
}

export default async function NodePage({ params }: Props) {
  const user = await requireUser();
  const p = await params;
  const store = await graphStoreOr404(p.store);
  const id = uuidSchema.safeParse(p.id);
  const detail = id.success ? await findOrNullAsync(() => graphBackend().getNodeDetail({ store, id: id.data })) : null;
  if (!detail) notFound();
  const { node } = detail;
  const base = `/graph/${encodeURIComponent(store)}`;
  const neighbours = [
    ...detail.outgoing.map((r) => ({ id: r.other.id, label: r.other.display_name, type: r.relationship_type, weight: r.weight, direction: "out" as const })),
    ...detail.incoming.map((r) => ({ id: r.other.id, label: r.other.display_name, type: r.relationship_type, weight: r.weight, direction: "in" as const })),
  ];
  return (
    <div className="space-y-6">
      <div className="space-y-1">
        <Link href={base} className="text-sm underline">
          ← Graph · {store}
        </Link>
        <h1 className="text-2xl font-semibold">{node.display_name}</h1>
        <p className="text-sm text-slate-600">
          <span data-testid="node-type">{node.entity_type}</span>
          {node.scope && <> · scope {node.scope}</>} · by {node.created_by} · updated {formatTime(node.updated_at)}
          {node.auto_extracted && <> · auto-extracted</>}
          {node.tags.length > 0 && <> · tags: {node.tags.join(", ")}</>}
        </p>
        <PoisonFlagList flags={node.flags} />
        {Object.keys(node.attributes).length > 0 && <pre tabIndex={0} className="overflow-x-auto rounded bg-slate-100 p-2 text-xs">{JSON.stringify(node.attributes, null, 2)}</pre>}
      </div>
      <ItemSection store={store} kind="node" id={node.id} user={user} />

      <Shown shown={detail.frames.length} total={detail.totals.frames} what="frames" />
      <div className="grid gap-4 md:grid-cols-2">
        {FRAME_COLUMNS.map((column) => {
          const frames = detail.frames.filter((f) => f.column === column);
          return (
            <LedgerSection key={column} id={`frames-${column}`} title={`${column[0].toUpperCase()}${column.slice(1)} frames`} testId={`frames-${column}`}>
              {frames.length === 0 ? (
                <p className="text-sm text-slate-600">None.</p>
              ) : (
                frames.map((f) => (
                  <article key={f.id} className="space-y-1 border-t border-slate-100 pt-2 first:border-0 first:pt-0" aria-label={`${column} frame`}>
                    <dl className="grid grid-cols-[max-content_1fr] gap-x-3 text-sm">
                      {Object.entries(f.properties).map(([k, v]) => (
                        <div key={k} className="contents">
                          <dt className="font-medium text-slate-700">{k}</dt>
                          <dd className="break-words">{typeof v === "string" ? v : JSON.stringify(v)}</dd>
                        </div>
                      ))}
                    </dl>
                    <PoisonFlagBadges flags={f.flags} />
                    <GraphEvidenceList evidence={f.evidence} base={base} />
                    <Shown shown={f.evidence.length} total={f.evidence_total} what="evidence links, the oldest first" />
                  </article>
                ))
              )}
            </LedgerSection>
          );
        })}
      </div>

      <RelationTable title="Relations out" id="relations-out" rows={detail.outgoing} total={detail.totals.outgoing} base={base} />
      <RelationTable title="Relations in" id="relations-in" rows={detail.incoming} total={detail.totals.incoming} base={base} />

      <LedgerSection id="neighbourhood-heading" title="Neighbourhood">
        <GraphNeighbourhood center={{ id: node.id, label: node.display_name }} neighbours={neighbours} base={base} />
      </LedgerSection>
    </div>
  );
}
