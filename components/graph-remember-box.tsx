"use client";

import Link from "@/components/link";
import { useActionState } from "react";
import type { ActionResult } from "@/lib/http/action-result";
import type { FlaggedRememberResponse } from "@/lib/graph/backend";
import type { RememberResult } from "@/lib/graph/remember";
import { PoisonFlagBadges } from "./poison-flags";
import { ConfidenceBadge, WeakAnswerNote } from "./confidence-band";

type Action = (prev: ActionResult<FlaggedRememberResponse> | null, form: FormData) => Promise<ActionResult<FlaggedRememberResponse>>;

const fmt = (x: number) => x.toFixed(3);

function Breakdown({ r }: { r: RememberResult }) {
  const b = r.breakdown;
  const rows: [string, string, number][] = [
    ["relevance: words + context + w_vec × cosine", `${fmt(b.lexical)} + ${fmt(b.context)} + w × ${b.vector === null ? "—" : fmt(b.vector)}`, b.terms.semantic],
    ["recency × episodic", `${fmt(b.recency)} × ${fmt(b.episodic)}`, b.terms.episodic],
    ["procedure match", fmt(b.procedure_match), b.terms.procedural],
    ["edge weight", fmt(b.edge_weight), b.terms.relation],
    ["inconsistency", fmt(b.inconsistency), b.terms.conflict],
  ];
  return (
    <table tabIndex={0} className="data mt-1 max-w-md text-xs" aria-label="Score breakdown">
      <thead>
        <tr>
          <th>Signal</th>
          <th>Value</th>
          <th>Term</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(([name, value, term]) => (
          <tr key={name}>
            <td>{name}</td>
            <td className="tabular-nums">{value}</td>
            <td className="tabular-nums">{fmt(term)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Ask the store what it remembers; every result shows how its score was made. */
export function GraphRememberBox({ store, action }: { store: string; action: Action }) {
  const [state, formAction, pending] = useActionState(action, null);
  const data = state?.ok ? state.data : undefined;
  return (
    <div className="space-y-3">
      <form action={formAction} className="grid gap-2 sm:grid-cols-6" aria-label="Remember">
        <input type="hidden" name="store" value={store} />
        <input className="input sm:col-span-4" name="query" placeholder="what do we know about…" aria-label="Remember query" required />
        <label className="flex items-center gap-1 text-sm">
          <input type="checkbox" name="include_core" /> include core
        </label>
        <button className="btn justify-center" disabled={pending}>
          Remember
        </button>
      </form>
      {state && !state.ok && (
        <p role="alert" className="text-sm text-red-600">
          {state.error}
        </p>
      )}
      {data && (
        <div className="space-y-2" data-testid="remember-results">
          <p className="text-xs text-slate-600">
            {data.results.length} results · mode {data.mode} · score = {data.formula} · weights {Object.entries(data.weights).map(([k, v]) => `${k} ${v}`).join(", ")}
          </p>
          <details className="text-xs text-slate-600">
            <summary>What the signals mean</summary>
            <dl className="grid grid-cols-[max-content_1fr] gap-x-3">
              {Object.entries(data.signals).map(([k, v]) => (
                <div key={k} className="contents">
                  <dt className="font-medium">{k}</dt>
                  <dd>{v}</dd>
                </div>
              ))}
            </dl>
          </details>
          {data.fallback && (
            <p role="status" className="text-sm text-amber-700">
              Lexical fallback ({data.fallback.reason}): {data.fallback.message}
            </p>
          )}
          <WeakAnswerNote reason={data.reason} />
          {data.results.length === 0 && <p className="text-sm text-slate-600">Nothing remembered for that.</p>}
          <ol className="space-y-3">
            {data.results.map((r) => {
              const base = `/graph/${encodeURIComponent(r.store)}`;
              return (
                <li key={`${r.store}:${r.kind}:${r.id}`}>
                  <article aria-label={`${r.kind} ${r.title}`} className="rounded border border-slate-200 p-2">
                    <div className="flex flex-wrap items-baseline gap-2 text-sm">
                      <ConfidenceBadge band={r.confidence} score={r.score} />
                      <span className="rounded bg-slate-100 px-1 text-xs">{r.kind === "node" ? r.entity_type : "thought"}</span>
                      {r.store !== store && <span className="rounded bg-indigo-100 px-1 text-xs text-indigo-800">{r.store}</span>}
                      <Link href={`${base}/${r.kind === "node" ? "nodes" : "thoughts"}/${r.id}`} className="underline">
                        {r.title}
                      </Link>
                      <PoisonFlagBadges flags={r.flags} />
                      {r.via && <span className="text-xs text-slate-500">via {r.via.relationship_type} ({r.via.weight.toFixed(2)})</span>}
                    </div>
                    <Breakdown r={r} />
                    {r.kind === "node" && r.evidence_thought_ids.length > 0 && (
                      <p className="mt-1 text-xs">
                        Evidence:{" "}
                        {r.evidence_thought_ids.map((id, i) => (
                          <span key={id}>
                            {i > 0 && ", "}
                            <Link href={`${base}/thoughts/${id}`} className="underline">
                              {id.slice(0, 8)}
                            </Link>
                          </span>
                        ))}
                      </p>
                    )}
                  </article>
                </li>
              );
            })}
          </ol>
        </div>
      )}
    </div>
  );
}
