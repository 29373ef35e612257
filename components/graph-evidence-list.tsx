import Link from "@/components/link";

type Evidence = { thought_id: string; stance: "supports" | "contradicts"; excerpt: string | null };

/** Evidence thoughts of a frame or relation, each linked to its thought page; contradictions marked. */
export function GraphEvidenceList({ evidence, base }: { evidence: Evidence[]; base: string }) {
  if (evidence.length === 0) return <p className="text-xs text-slate-500">No evidence linked.</p>;
  return (
    <ul className="space-y-0.5 text-xs" aria-label="Evidence">
      {evidence.map((e) => (
        <li key={e.thought_id}>
          {e.stance === "contradicts" && <span className="mr-1 rounded bg-red-100 px-1 text-red-800">contradicts</span>}
          <Link href={`${base}/thoughts/${e.thought_id}`} className="underline">
            {e.excerpt ?? e.thought_id}
          </Link>
        </li>
      ))}
    </ul>
  );
}
