import Link from "@/components/link";
import type { SearchHit } from "@/lib/index/search";
import { readerHref, type SearchUrlState } from "./search-url";

/** The snippet with matched words in <mark>, built as elements (no HTML from the index reaches the page). */
export function SearchSnippet({ hit, clamp = 4 }: { hit: SearchHit; clamp?: 2 | 4 }) {
  const parts: React.ReactNode[] = [];
  let last = 0;
  hit.highlights.forEach(([s, e], i) => {
    if (s > last) parts.push(hit.snippet.slice(last, s));
    parts.push(
      <mark key={i} className="bg-yellow-200">
        {hit.snippet.slice(s, e)}
      </mark>,
    );
    last = e;
  });
  parts.push(hit.snippet.slice(last));
  return <p className={`${clamp === 2 ? "line-clamp-2" : "line-clamp-4"} break-words text-sm text-slate-700`}>{parts}</p>;
}

/** Why this hit ranks where it does: each signal's rank and score, the fused score, the recency factor. */
export function SearchHitExplain({ hit }: { hit: SearchHit }) {
  const s = hit.signals;
  if (!s) return null;
  return (
    <dl className="grid grid-cols-2 gap-x-4 text-xs text-slate-500 sm:grid-cols-4" data-testid="search-explain">
      <div>
        <dt className="inline">lexical: </dt>
        <dd className="inline">{s.fts ? `#${s.fts.rank} (bm25 ${s.fts.score.toPrecision(3)})` : "—"}</dd>
      </div>
      <div>
        <dt className="inline">vector: </dt>
        <dd className="inline">{s.vector ? `#${s.vector.rank} (cos ${s.vector.similarity.toFixed(3)})` : "—"}</dd>
      </div>
      <div>
        <dt className="inline">fused: </dt>
        <dd className="inline">{s.fused.toFixed(4)}</dd>
      </div>
      <div>
        <dt className="inline">decay: </dt>
        <dd className="inline">{s.decay === null ? "off" : s.decay.toFixed(3)}</dd>
      </div>
    </dl>
  );
}

/** The hit's title (its path when it has none), opening the reader at the chunk; the reader links back to the search it came `from`. */
export function SearchHitLink({ hit, title, from }: { hit: SearchHit; title?: string; from?: SearchUrlState }) {
  return (
    <Link href={readerHref({ store: hit.store, chunkId: hit.chunk_id, from })} className="break-words font-medium text-blue-700 underline" data-testid="search-hit-link">
      {title ?? hit.path}
    </Link>
  );
}
