import { holdingStoreHandles } from "../db/connection";
import { archivedStores, assertStoresWritable } from "../db/store-lifecycle";
import { z } from "zod";
import { governance } from "../backend/governance";
import type { SwitchGate } from "../embed/reembed";
import { getEmbedder } from "../embed/model";
import type { Fingerprint } from "../embed/providers";
import { AppError } from "../errors";
import { recordHealthEvent } from "../governance/health-events";
import { log } from "../log";
import { embeddingsBackend } from "../stores/embeddings-backend";
import { stores } from "../stores/backend";
import { storeReader } from "./content";
import { auditSelfRecall } from "./db";
import { activeFingerprintOf, evaluateStore, GATE_MODE, type EvaluationOutcome } from "./evaluate";
import type { EvalProgress, EvalTarget, EvaluationJob, Score, SelfRecallReport, SelfRecallRun } from "./report";
import { claimEvaluationJob, finishEvaluationJob, getEvaluationJob, keepJobAlive, latestEvaluationJob, progressWriter } from "./jobs";
import { DEFAULT_PROBE_SEED, DEFAULT_PROBES_PER_KIND, MAX_PROBES_PER_KIND, PROBE_KINDS, type ProbeKind } from "./probes";
import { evaluationScheduleOf, runDueEvaluations, startEvaluationScheduler, type EvaluationTrigger } from "./schedule";
import { latestProbeSet, latestRunFor, listRuns, saveRun } from "./runs";
import { fellBeyondNoise, poolScores } from "./score";

const KIND_PLURALS: Record<ProbeKind, string> = { document: "documents", memory: "memories", trace: "traces", learning: "learnings", thought: "thoughts" };

/** A store's self-recall (docs/self-recall.md): evaluations are admin jobs; a fall beyond the noise is a health event and gates a held model switch. */
export const evaluateInputSchema = z
  .object({
    /** active: the store as it answers now; shadow: the candidate model a held re-embed built. */
    target: z.enum(["active", "shadow"]).default("active"),
    /** Probes per kind (documents, memories, traces, learnings, thoughts). */
    per_kind: z.coerce.number().int().min(1).max(MAX_PROBES_PER_KIND).default(DEFAULT_PROBES_PER_KIND),
    seed: z.coerce.number().int().min(0).max(2 ** 31 - 1).default(DEFAULT_PROBE_SEED),
    reason: z.string().trim().min(1).max(500).optional(),
  })
  .strict();
export type EvaluateInput = z.input<typeof evaluateInputSchema>;

async function configuredModel(): Promise<Fingerprint> {
  try {
    return await getEmbedder().fingerprint;
  } catch (e) {
    throw new AppError("unavailable", `the embedding provider did not answer, so the model a run would record is unknown: ${(e as Error).message}`);
  }
}

/** A shadow run needs a re-embed towards the configured model whose vectors are all built. */
async function assertShadowReady({ store, configured }: { store: string; configured: Fingerprint }): Promise<void> {
  const progress = await embeddingsBackend().getReembedProgress({ store });
  if (!progress || progress.status === "done" || progress.target_fingerprint_id !== configured.id) {
    throw new AppError("conflict", "there is no held re-embed to the configured model: a shadow evaluation measures the new model's vectors before the switch");
  }
  if (progress.remaining > 0) throw new AppError("conflict", `the re-embed is not finished (${progress.done} of ${progress.total} done): the new model is evaluated once every item has its vector`);
}

/** What moved between two runs: the model, the settings, or the probes. */
export function changeBetween(before: SelfRecallRun | undefined, after: SelfRecallRun): string[] {
  if (!before) return [];
  const out: string[] = [];
  if (before.fingerprint_id !== after.fingerprint_id) out.push(`model ${before.model} → ${after.model}`);
  const a = before.settings.search;
  const b = after.settings.search;
  if ((a.tokenizer ?? null) !== (b.tokenizer ?? null)) out.push(`full-text tokenizer ${a.tokenizer ?? "?"} → ${b.tokenizer ?? "?"}`);
  if (a.chunking_version !== b.chunking_version) out.push(`chunking version ${a.chunking_version} → ${b.chunking_version}`);
  if (a.default_mode !== b.default_mode || a.group !== b.group) out.push(`search defaults ${a.default_mode}/${a.group} → ${b.default_mode}/${b.group}`);
  if (JSON.stringify(a.fusion_weights) !== JSON.stringify(b.fusion_weights)) out.push("fusion weights");
  if (before.probe_set_id !== after.probe_set_id) out.push("probes drawn again (the content changed)");
  return out;
}

/** After an active run: a fall beyond the noise from the run before on the same probes is one health event (and its webhook). */
async function noticeFall(run: SelfRecallRun): Promise<void> {
  if (run.target !== "active" || run.mrr10 === null || run.noise === null) return;
  const [, before] = await listRuns({ store: run.store, target: "active", limit: 2 });
  if (!before || before.probe_set_id !== run.probe_set_id || before.mrr10 === null || before.noise === null) return;
  if (!fellBeyondNoise({ mrr10: before.mrr10, noise: before.noise }, { mrr10: run.mrr10, noise: run.noise })) return;
  const change = changeBetween(before, run);
  await recordHealthEvent({
    ts: run.ts,
    kind: "self_recall",
    store: run.store,
    subject: `run:${run.id}`,
    status: "fell",
    previousStatus: null,
    reason: `self-recall fell: MRR@10 ${before.mrr10.toFixed(3)} → ${run.mrr10.toFixed(3)}, hit@10 ${(before.hit10 ?? 0).toFixed(3)} → ${(run.hit10 ?? 0).toFixed(3)} (noise ±${Math.max(before.noise, run.noise).toFixed(3)}, ${run.probes} probes)${change.length ? `; changed: ${change.join(", ")}` : "; no model or setting changed (the content did)"}`,
  });
}

/** Thrown into a run whose store was archived or deleted under it: the job ends failed with this reason. */
class EvaluationCancelled extends Error {}

/** Why a run of this store cannot go on (archived or deleted meanwhile), or null while it can. */
async function storeGoneReason(store: string): Promise<string | null> {
  // The list, not the store's handle: a process may keep a handle of a store another request (or replica) has dropped.
  if (!(await stores().listStoreNames()).includes(store)) return `cancelled: store ${store} was deleted while it was being evaluated; nothing was recorded`;
  if ((await archivedStores([store])).has(store)) return `cancelled: store ${store} was archived while it was being evaluated; nothing was recorded (evaluate it again once it is unarchived)`;
  return null;
}

/** How often a running evaluation looks whether its store was archived or deleted. */
const STORE_CHECK_MS = 2_000;

async function runClaimed({ job, store, target, seed, perKind, configured, actor, trigger, cpuShare, onProgress }: { job: EvaluationJob; store: string; target: EvalTarget; seed: number; perKind: number; configured: Fingerprint; actor: string; trigger: string; cpuShare: number; onProgress?: (p: EvalProgress) => void }): Promise<SelfRecallRun | null> {
  const write = progressWriter(job.id);
  const stopBeating = keepJobAlive(job.id);
  let lastCheck = Date.now();
  const assertStoreStays = async () => {
    const gone = await storeGoneReason(store);
    if (gone) throw new EvaluationCancelled(gone);
  };
  try {
    const outcome: EvaluationOutcome = await evaluateStore({
      store,
      target,
      seed,
      perKind,
      configured,
      cpuShare,
      onProgress: async (p) => {
        if (Date.now() - lastCheck >= STORE_CHECK_MS) {
          lastCheck = Date.now();
          await assertStoreStays();
        }
        onProgress?.(p);
        await write(p);
      },
    });
    await assertStoreStays();
    const run = await saveRun({
      store,
      job_id: job.id,
      probe_set_id: outcome.set.id,
      target,
      fingerprint_id: outcome.fingerprintId,
      model: `${configured.provider}:${configured.model}`,
      ts: Date.now(),
      actor,
      trigger,
      settings: outcome.settings,
      results: outcome.results,
      duration_ms: outcome.durationMs,
    });
    // The fall's health event before the job says it is done: whoever sees the job finished sees its event too.
    await noticeFall(run).catch((e: unknown) => log("warn", "could not record a self-recall fall", { store, error: String(e) }));
    await finishEvaluationJob({ id: job.id, outcome: { result: { run_id: run.id, target, hit10: run.hit10, mrr10: run.mrr10 } } });
    return run;
  } catch (e) {
    // A store archived or deleted under the run (its tables gone mid-question, say) says so, not the raw error it caused.
    const gone = e instanceof EvaluationCancelled ? e.message : await storeGoneReason(store).catch(() => null);
    if (gone) {
      log("warn", "self-recall evaluation cancelled", { store, jobId: job.id, reason: gone });
      await auditSelfRecall({ actor: "system:jobs", action: "store.evaluate.cancel", target: `store:${store}`, reason: gone, details: { jobId: job.id } }).catch(() => undefined);
    } else log("error", "self-recall evaluation failed", { store, jobId: job.id, error: e instanceof Error ? e.stack : String(e) });
    await finishEvaluationJob({ id: job.id, outcome: { error: gone ?? (e instanceof Error ? e.message : String(e)) } });
    return null;
  } finally {
    stopBeating();
  }
}

/**
 * Start an evaluation of the store (or answer its running one). `wait`
 * runs it to the end before answering (the CLI, the switch gate); otherwise
 * it runs in the background and the job is polled. A run nobody asked for
 * (`notSince`: scheduled, after a reindex) is paced to `cpuShare` and is not
 * started when an evaluation of the store has started since `notSince`
 * (null: nothing started).
 */
export async function startEvaluation(a: StartArgs): Promise<EvaluationJob>;
export async function startEvaluation(a: StartArgs & { notSince: number }): Promise<EvaluationJob | null>;
export async function startEvaluation({ store, actor, input, trigger = "on demand", wait = false, cpuShare = 1, notSince, onProgress }: StartArgs & { notSince?: number }): Promise<EvaluationJob | null> {
  const parsed = evaluateInputSchema.parse(input);
  await storeReader(store); // 404 for a store that is not there, before any row is written
  await assertStoresWritable([store]); // an evaluation writes (its job, runs, the store's search log): not on an archived store
  const configured = await configuredModel();
  if (parsed.target === "shadow") await assertShadowReady({ store, configured });
  const reason = parsed.reason ? `${trigger}: ${parsed.reason}` : trigger;
  const details = { target: parsed.target, perKind: parsed.per_kind, seed: parsed.seed, trigger, cpuShare };
  const { job, run } = notSince === undefined ? await claimEvaluationJob({ store, actor, reason, details }) : await claimEvaluationJob({ store, actor, reason, details, notSince });
  if (!job) return null;
  if (!run) return job;
  // The evaluation holds the store's connection while it runs: idle connections closed for DUALMIND_MAX_OPEN_STORES must not close it under it.
  const going = holdingStoreHandles({ work: () => runClaimed({ job, store, target: parsed.target, seed: parsed.seed, perKind: parsed.per_kind, configured, actor, trigger, cpuShare, onProgress }) });
  if (wait) await going;
  return (await getEvaluationJob({ id: job.id, store })) ?? job;
}

type StartArgs = { store: string; actor: string; input: EvaluateInput; trigger?: EvaluationTrigger; wait?: boolean; cpuShare?: number; onProgress?: (p: EvalProgress) => void };

const startDue = async ({ store, trigger, notSince, cpuShare }: { store: string; trigger: "after reindex" | "scheduled"; notSince: number; cpuShare: number }) => {
  const asked = Date.now();
  const job = await startEvaluation({ store, actor: "system:scheduler", input: {}, trigger, cpuShare, notSince });
  // Started by this look, not one running since an earlier look.
  return { started: job !== null && job.reason === trigger && job.started_at >= asked };
};

/** One look of the scheduler: the stores whose run is due are started (lib/eval/schedule.ts). */
export function startDueEvaluations({ now }: { now?: number } = {}): Promise<string[]> {
  return runDueEvaluations({ start: startDue, now });
}

/** The server's scheduler (instrumentation.ts): runs after a reindex and every day or week, paced (lib/eval/schedule.ts). */
export function startSelfRecallScheduler(): void {
  startEvaluationScheduler(startDue);
}

/** The store's self-recall: the newest run, the trend of its runs, the last evaluation job and the next scheduled one. */
export async function getSelfRecall({ store, limit = 30 }: { store: string; limit?: number }): Promise<SelfRecallReport> {
  await storeReader(store);
  // A few runs more than shown, so the oldest shown still has the run before it to say what changed.
  const runs = (await listRuns({ store, limit: limit + 20 })).reverse();
  const shown = runs.slice(-limit);
  const active = shown.filter((r) => r.target === "active");
  const trend = shown.map((r) => {
    const previous = [...runs.slice(0, runs.indexOf(r))].reverse().find((p) => p.target === r.target);
    return { run_id: r.id, ts: r.ts, target: r.target, model: r.model, hit10: r.hit10, mrr10: r.mrr10, noise: r.noise, change: changeBetween(previous, r) };
  });
  return { store, latest: active.at(-1) ?? null, trend, job: await latestEvaluationJob({ store }), schedule: await evaluationScheduleOf({ store }) };
}

/**
 * The figures the gate compares: each kind both runs asked by raw vector
 * neighbours, pooled the same way on both sides (a run from before every
 * kind had a shadow compares on documents and memories alone).
 */
export function gateScores(baseline: SelfRecallRun, shadow: SelfRecallRun): { kinds: ProbeKind[]; before: Score; after: Score } | null {
  const kinds = PROBE_KINDS.filter((k) => baseline.results.by_kind[k]?.[GATE_MODE] && shadow.results.by_kind[k]?.[GATE_MODE]);
  const before = poolScores(kinds.map((k) => baseline.results.by_kind[k]![GATE_MODE]!));
  const after = poolScores(kinds.map((k) => shadow.results.by_kind[k]![GATE_MODE]!));
  return before && after ? { kinds, before, after } : null;
}

/**
 * Before an admin's switch of a held re-embed: the candidate model on the
 * store's own probes against the active model's last run on the same probes
 * (evaluating the candidate first when it has not been). A fall beyond the
 * noise refuses (409) unless `override` says why; the override is a ledger
 * override with who and why. Without a run of the active model to compare
 * with, the switch goes ahead unmeasured (the audit row says so).
 */
export async function checkSwitchGate({ store, actor, tokenLabel, override }: { store: string; actor: string; tokenLabel: string; override?: string }): Promise<SwitchGate> {
  const unmeasured = (reason: string): SwitchGate => ({ verdict: "unmeasured", reason, before: null, after: null, noise: null, override_id: null });
  const progress = await embeddingsBackend().getReembedProgress({ store });
  // Nothing to gate: the switch itself answers why it cannot happen.
  if (!progress || progress.status === "done" || progress.remaining > 0) return unmeasured("no finished re-embed is waiting for a switch");
  const configured = await configuredModel();
  if (progress.target_fingerprint_id !== configured.id) return unmeasured("the re-embed's model is not the configured one");
  const set = await latestProbeSet({ store });
  const active = await activeFingerprintOf(await storeReader(store));
  const baseline = set && active ? await latestRunFor({ store, target: "active", fingerprintId: active, probeSetId: set.id }) : null;
  if (!baseline || !baseline.results.gate) return unmeasured("the active model has no self-recall run on the store's probes to compare with (evaluate before changing the model)");
  let shadow = await latestRunFor({ store, target: "shadow", fingerprintId: configured.id, probeSetId: set!.id });
  if (!shadow) {
    const job = await startEvaluation({ store, actor, input: { target: "shadow", per_kind: set!.perKind, seed: set!.seed }, trigger: "switch gate", wait: true });
    if (job.status === "running") throw new AppError("conflict", "an evaluation of this store is running: switch when it has finished");
    shadow = job.result ? ((await listRuns({ store, target: "shadow", limit: 1 }))[0] ?? null) : null;
    if (!shadow || shadow.probe_set_id !== baseline.probe_set_id) return unmeasured("the store's content changed since the active model's run: its probes were drawn again");
  }
  const compared = gateScores(baseline, shadow);
  if (!compared) return unmeasured("the two models' runs have no kind in common to compare");
  const { before, after, kinds } = compared;
  const noise = Math.max(before.noise, after.noise);
  const figures = { before: before.mrr10, after: after.mrr10, noise };
  const summary = `self-recall by vector neighbours (MRR@10 over ${after.probes} probes of ${kinds.map((k) => KIND_PLURALS[k]).join(", ")}): ${before.mrr10.toFixed(3)} with the active model, ${after.mrr10.toFixed(3)} with the new one (noise ±${noise.toFixed(3)})`;
  if (!fellBeyondNoise(before, after)) return { verdict: "passed", reason: summary, ...figures, override_id: null };
  if (!override) throw new AppError("conflict", `the new model finds the store's own content worse: ${summary}. Switch with an override (why) to go ahead anyway; it is recorded in the ledger.`);
  const { override: row } = await governance().recordOverride({
    input: { note: `model switch of store ${store} to ${configured.provider}:${configured.model} despite lower self-recall (${summary}): ${override}` },
    actor,
    tokenLabel,
  });
  return { verdict: "overridden", reason: `${summary}; overridden: ${override}`, ...figures, override_id: row.override_id };
}
