"use client";

import { useActionState } from "react";
import { AutoRefresh } from "@/components/auto-refresh";
import type { SelfRecallReport } from "@/lib/eval/report";
import { formatCount, formatNumber, formatPercent, formatTime } from "@/lib/format";
import type { ActionResult } from "@/lib/http/action-result";

type FormAction = (prev: ActionResult | null, form: FormData) => Promise<ActionResult>;

const KINDS = ["document", "memory", "trace", "learning", "thought"] as const;
const MODES = ["hybrid", "fts", "vector", "knn"] as const;

/** When the next run nobody asks for is due and why, or that there is none (DUALMIND_EVALUATE_EVERY). */
function NextRun({ schedule }: { schedule: SelfRecallReport["schedule"] }) {
  if (schedule.every === "off") return <>no scheduled runs (DUALMIND_EVALUATE_EVERY=off)</>;
  const share = `paced to ${formatPercent(schedule.cpu_share, 0)} of a core`;
  if (schedule.waiting_for) return <>after reindex, waiting for {schedule.waiting_for} · {share}</>;
  if (schedule.next_due_at === null) return <>after the next reindex that changes the store · {share}</>;
  return (
    <>
      {schedule.next_trigger} · due {formatTime(schedule.next_due_at)} · {share}
    </>
  );
}

function Figure({ hit10, mrr10, noise }: { hit10: number | null; mrr10: number | null; noise: number | null }) {
  if (hit10 === null || mrr10 === null) return <span>—</span>;
  return (
    <span>
      <strong>{formatPercent(hit10, 0)}</strong> in the top 10 · MRR@10 {formatNumber(mrr10, 3)}
      {noise !== null && <span className="text-slate-500"> ±{formatNumber(noise, 3)}</span>}
    </span>
  );
}

/** An admin's button that posts one form to a server action and says how it went. */
function ActionForm({ action, fields, label, children }: { action: FormAction; fields: Record<string, string>; label: string; children?: React.ReactNode }) {
  const [state, formAction, pending] = useActionState(action, null);
  return (
    <form action={formAction} className="flex flex-wrap items-center gap-2">
      {Object.entries(fields).map(([name, value]) => (
        <input key={name} type="hidden" name={name} value={value} />
      ))}
      {children}
      <button className="btn-secondary" disabled={pending}>
        {label}
      </button>
      {state && (
        <span role={state.ok ? "status" : "alert"} className={state.ok ? "text-emerald-700" : "text-red-600"}>
          {state.ok ? state.message : state.error}
        </span>
      )}
    </form>
  );
}

/**
 * Self-recall on Health and the store page: how well each store finds its
 * own content (hit@10 and MRR@10 in the default mode), the trend of its runs
 * with what changed between them, and — for one store — the figures per kind
 * and mode, the new model beside the active one before a switch, and the
 * admin's Evaluate button (and Switch with an override when the gate refuses).
 */
export function SelfRecallCard({ reports, isAdmin, evaluate, switchModel }: { reports: SelfRecallReport[]; isAdmin: boolean; evaluate?: FormAction; switchModel?: FormAction }) {
  const single = reports.length === 1 ? reports[0] : null;
  const running = reports.some((r) => r.job?.status === "running");
  return (
    <section className="card space-y-2 text-sm" aria-labelledby="self-recall-heading" data-testid="self-recall-card">
      <AutoRefresh active={running} everyMs={2_000} />
      <h2 id="self-recall-heading" className="font-semibold">
        Self-recall
      </h2>
      <p className="text-xs text-slate-600">How often a store finds its own content: probes drawn from what it holds, asked as an agent would. It measures what the store holds, not what users will ask.</p>
      {!single && (
        <table tabIndex={0} className="data">
          <thead>
            <tr>
              <th>Store</th>
              <th>Self-recall</th>
              <th>Trend (MRR@10, oldest first)</th>
              <th>Last change</th>
              <th>Last ran because</th>
              <th>Next run</th>
            </tr>
          </thead>
          <tbody>
            {reports.map((r) => {
              const active = r.trend.filter((t) => t.target === "active");
              const last = active.at(-1);
              return (
                <tr key={r.store} data-testid={`self-recall-${r.store}`}>
                  <td>{r.store}</td>
                  <td>{last ? <Figure hit10={last.hit10} mrr10={last.mrr10} noise={last.noise} /> : "not evaluated yet"}</td>
                  <td>{active.slice(-8).map((t) => formatNumber(t.mrr10, 2)).join(" → ") || "—"}</td>
                  <td>{last?.change.join("; ") || "—"}</td>
                  <td>{r.job?.reason ?? "—"}</td>
                  <td>
                    <NextRun schedule={r.schedule} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {single && <StoreSelfRecall report={single} isAdmin={isAdmin} evaluate={evaluate} switchModel={switchModel} />}
    </section>
  );
}

function StoreSelfRecall({ report, isAdmin, evaluate, switchModel }: { report: SelfRecallReport; isAdmin: boolean; evaluate?: FormAction; switchModel?: FormAction }) {
  const { latest, trend, job } = report;
  const shadow = trend.filter((t) => t.target === "shadow").at(-1);
  const shadowIsNewest = shadow !== undefined && trend.at(-1)?.run_id === shadow.run_id;
  return (
    <div className="space-y-2">
      <p data-testid="self-recall-figure">
        {latest ? (
          <>
            <Figure hit10={latest.hit10} mrr10={latest.mrr10} noise={latest.noise} /> · {formatCount(latest.probes)} probes · {latest.model} · {formatTime(latest.ts)} ({latest.trigger})
          </>
        ) : (
          "Not evaluated yet."
        )}
      </p>
      {job && (
        <p className="text-xs text-slate-600" data-testid="self-recall-job" data-status={job.status}>
          Last evaluation: {job.status}
          {job.status === "running" && job.progress ? ` (${formatCount(job.progress.done)} of ${formatCount(job.progress.total)} questions)` : ""}
          {job.error ? `: ${job.error}` : ""} · {job.reason ?? "on demand"} · started {formatTime(job.started_at)} by {job.actor}
        </p>
      )}
      <p className="text-xs text-slate-600" data-testid="self-recall-next">
        Next run: <NextRun schedule={report.schedule} />
      </p>
      {latest && (
        <table tabIndex={0} className="data" data-testid="self-recall-kinds">
          <thead>
            <tr>
              <th>Kind</th>
              {MODES.map((m) => (
                <th key={m}>{m === "knn" ? "vector neighbours" : m} MRR@10</th>
              ))}
              <th>Probes</th>
            </tr>
          </thead>
          <tbody>
            {KINDS.filter((k) => latest.results.by_kind[k]).map((k) => {
              const byMode = latest.results.by_kind[k]!;
              return (
                <tr key={k}>
                  <td>{k}</td>
                  {MODES.map((m) => (
                    <td key={m}>
                      {byMode[m] ? formatNumber(byMode[m]!.mrr10, 3) : "—"}
                      {byMode[m]?.fallbacks ? <span className="text-amber-700"> ({byMode[m]!.fallbacks} fell back)</span> : null}
                    </td>
                  ))}
                  <td>{formatCount(Object.values(byMode)[0]?.probes ?? 0)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {shadow && shadowIsNewest && (
        <p data-testid="self-recall-switch">
          Before the switch, by vector neighbours (MRR@10): active model {latest?.results.gate ? formatNumber(latest.results.gate.mrr10, 3) : "not measured"} · new model {shadow.model}{" "}
          {formatNumber(shadow.mrr10, 3)} ±{formatNumber(shadow.noise, 3)}
        </p>
      )}
      {trend.length > 1 && (
        <ol className="list-inside list-decimal text-xs text-slate-700" data-testid="self-recall-trend">
          {trend.slice(-8).map((t) => (
            <li key={t.run_id}>
              {formatTime(t.ts)} · {t.target === "shadow" ? "new model (shadow)" : "active"} · {t.model} · MRR@10 {formatNumber(t.mrr10, 3)} · hit@10 {formatPercent(t.hit10, 0)}
              {t.change.length ? ` · changed: ${t.change.join("; ")}` : ""}
            </li>
          ))}
        </ol>
      )}
      {isAdmin && evaluate && (
        <div className="flex flex-wrap gap-2">
          <ActionForm action={evaluate} fields={{ store: report.store, target: "active" }} label="Evaluate" />
          <ActionForm action={evaluate} fields={{ store: report.store, target: "shadow" }} label="Evaluate the new model" />
        </div>
      )}
      {isAdmin && switchModel && shadow && shadowIsNewest && (
        <ActionForm action={switchModel} fields={{ store: report.store, intent: "switch" }} label="Switch with override">
          <label className="flex items-center gap-1">
            Why (recorded in the ledger)
            <input name="override_reason" className="input" maxLength={2000} required />
          </label>
        </ActionForm>
      )}
    </div>
  );
}
