"use client";

import { useState } from "react";
import type { SearchHit, SearchResult } from "@/lib/index/search";
import { SearchHitExplain, SearchHitLink, SearchSnippet } from "./search-hit";

/** One leg of the inspect view: its answer, or why it has none. */
export type InspectLeg = { id: "fts" | "vector" | "hybrid"; title: string; note: string; result: SearchResult | null; error: string | null };

// Literal class names (Tailwind keeps only what it can see in the source).
const LINK_COLOURS = [
  "border-l-sky-500",
  "border-l-emerald-500",
  "border-l-amber-500",
  "border-l-fuchsia-500",
  "border-l-rose-500",
  "border-l-indigo-500",
  "border-l-lime-500",
  "border-l-orange-500",
];

const keyOf = (hit: SearchHit) => `${hit.store}:${hit.id}`;

/**
 * A leg's own hits. When the vector leg could not run, search answered with
 * full-text instead (and said why): those hits are not the vector leg's, so
 * the column shows the reason, not a second copy of the full-text column.
 */
const hits = (leg: InspectLeg): SearchHit[] => (!leg.result || (leg.id !== "hybrid" && leg.result.effective_mode !== leg.id) ? [] : leg.result.results);

/**
 * Per-stage details of an explained answer, when the engine reports them
 * (candidates and timings per stage). Read defensively: older answers have none.
 */
type StageDetail = { name?: string; stage?: string; ms?: number; durationMs?: number; candidates?: number };

function stagesOf(result: SearchResult | null): StageDetail[] {
  const explain = (result as unknown as { explain?: { stages?: unknown } } | null)?.explain;
  return Array.isArray(explain?.stages) ? (explain.stages as StageDetail[]) : [];
}

function StageTimings({ result }: { result: SearchResult | null }) {
  const stages = stagesOf(result);
  if (stages.length === 0) return null;
  return (
    <ul className="text-xs text-slate-500" data-testid="inspect-stages">
      {stages.map((s, i) => {
        const ms = s.ms ?? s.durationMs;
        return (
          <li key={i}>
            {s.name ?? s.stage ?? `stage ${i + 1}`}
            {typeof s.candidates === "number" && ` · ${s.candidates} candidates`}
            {typeof ms === "number" && ` · ${ms.toFixed(1)} ms`}
          </li>
        );
      })}
    </ul>
  );
}

/** The score a leg ranked by, in that leg's own terms. */
function legScore(leg: InspectLeg["id"], hit: SearchHit): string {
  if (leg === "fts") return `bm25 ${(hit.signals?.fts?.score ?? hit.score).toPrecision(3)}`;
  if (leg === "vector") return hit.signals?.vector ? `cos ${hit.signals.vector.similarity.toFixed(3)}` : `score ${hit.score.toFixed(3)}`;
  return `fused ${hit.score.toFixed(4)}`;
}

/**
 * Full-text, vector and fused rankings side by side. A chunk found by more
 * than one leg wears the same colour and letter in each column; pointing at
 * (or focusing) a hit outlines it wherever it appears.
 */
export function SearchInspect({ legs, firstRank }: { legs: InspectLeg[]; firstRank: number }) {
  const [active, setActive] = useState<string | null>(null);
  const seen = new Map<string, number>();
  for (const leg of legs) for (const hit of hits(leg)) seen.set(keyOf(hit), (seen.get(keyOf(hit)) ?? 0) + 1);
  const shared = new Map<string, number>();
  // Letters in the fused column's order first: that is the answer people read.
  for (const leg of [...legs].reverse()) {
    for (const hit of hits(leg)) {
      const key = keyOf(hit);
      if ((seen.get(key) ?? 0) > 1 && !shared.has(key)) shared.set(key, shared.size);
    }
  }

  return (
    <section aria-label="Inspect" className="grid gap-3 lg:grid-cols-3" data-testid="search-inspect">
      {legs.map((leg) => (
        <div key={leg.id} className="min-w-0 space-y-2" role="region" aria-label={leg.title} data-testid={`inspect-leg-${leg.id}`}>
          <header className="space-y-1">
            <h2 className="text-lg font-medium">{leg.title}</h2>
            <p className="text-xs text-slate-500">{leg.note}</p>
            {leg.result && (
              <p className="text-xs text-slate-600" data-testid="inspect-leg-summary">
                {hits(leg).length}
                {leg.result.has_more && hits(leg).length > 0 ? "+" : ""} hits · answered by {leg.result.effective_mode}
                {leg.result.fusion && ` · w_fts ${leg.result.fusion.w_fts}, w_vec ${leg.result.fusion.w_vec}, k ${leg.result.fusion.k}`}
              </p>
            )}
            <StageTimings result={leg.result} />
          </header>
          {leg.error && (
            <p role="alert" className="rounded bg-red-50 p-2 text-sm text-red-700">
              {leg.error}
            </p>
          )}
          {leg.result?.fallback && (
            <p className="rounded bg-amber-50 p-2 text-xs text-amber-800" data-testid="inspect-leg-fallback">
              {leg.result.fallback.message}
            </p>
          )}
          {leg.result && hits(leg).length === 0 && <p className="text-sm text-slate-600">{leg.id !== "hybrid" && leg.result.effective_mode !== leg.id ? "This leg could not run (see above)." : "No hits in this leg."}</p>}
          <ol className="space-y-2">
            {hits(leg).map((hit, i) => {
              const key = keyOf(hit);
              const link = shared.get(key);
              const colour = link === undefined ? "border-l-slate-200" : LINK_COLOURS[link % LINK_COLOURS.length];
              return (
                <li
                  key={key}
                  className={`card space-y-1 border-l-4 ${colour} ${active === key ? "ring-2 ring-blue-500" : ""}`}
                  data-testid="inspect-hit"
                  data-hit-key={key}
                  data-active={active === key ? "true" : undefined}
                  onMouseEnter={() => setActive(key)}
                  onMouseLeave={() => setActive(null)}
                  onFocus={() => setActive(key)}
                  onBlur={() => setActive(null)}
                >
                  <div className="flex flex-wrap items-baseline gap-2 text-sm">
                    <span className="font-mono text-xs text-slate-500">#{firstRank + i}</span>
                    {link !== undefined && (
                      <span className="rounded bg-slate-100 px-1 font-mono text-xs" title="found by more than one leg" data-testid="inspect-link-badge">
                        {String.fromCharCode(65 + (link % 26))}
                      </span>
                    )}
                    <SearchHitLink hit={hit} />
                  </div>
                  <p className="text-xs text-slate-500">
                    {hit.store} · chunk {hit.chunk_index} · {legScore(leg.id, hit)}
                  </p>
                  <SearchSnippet hit={hit} clamp={2} />
                  {leg.id === "hybrid" && <SearchHitExplain hit={hit} />}
                </li>
              );
            })}
          </ol>
        </div>
      ))}
    </section>
  );
}
