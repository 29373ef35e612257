import Link from "@/components/link";

/** An unknown store or chunk: said plainly, inside the dashboard, with a way back. */
export default function ChunkNotFound() {
  return (
    <div className="card space-y-2" data-testid="reader-not-found">
      <h1 className="text-xl font-semibold">Chunk not found</h1>
      <p className="text-sm text-slate-600">
        This store has no such chunk. A document that changed since the search was run gets new chunks, and a deleted one has none: search again to find its current text.
      </p>
      <Link className="text-sm text-blue-700 underline" href="/search">
        Back to search
      </Link>
    </div>
  );
}
