import { formatTime } from "@/lib/format";
import type { DialecticAnnotation } from "@/lib/governance/dialectic";

/** People's notes on a review, oldest first: shown beside the transcript, never part of it. */
export function SessionAnnotations({ notes }: { notes: DialecticAnnotation[] }) {
  if (notes.length === 0) return <p className="text-sm text-slate-600">No notes yet.</p>;
  return (
    <ol className="space-y-2" aria-label="Notes" data-testid="session-notes">
      {notes.map((n) => (
        <li key={n.id} className="rounded-md border border-slate-200 bg-slate-50 p-2 text-sm">
          <p className="text-xs text-slate-500">
            <span className="font-mono">{n.author}</span> · {formatTime(n.createdAt)}
          </p>
          <p className="whitespace-pre-wrap break-words">{n.body}</p>
        </li>
      ))}
    </ol>
  );
}
