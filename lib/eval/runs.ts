import { sql } from "drizzle-orm";
import { govRow, govRows, govRun, num, numOrNull } from "./db";
import type { EvalResults, EvalSettings, EvalTarget, Score, SelfRecallRun } from "./report";
import type { ContentFingerprint, Probe } from "./probes";

/**
 * Probe sets and evaluation runs, kept per store over time (beside the
 * ledger, so Health, Prometheus and the switch gate read them the same on
 * both backends). Runs are pruned to KEEP_RUNS per store, probe sets to the
 * ones a kept run still names.
 */
export type StoredProbeSet = { id: number; store: string; generatorVersion: number; seed: number; perKind: number; createdAt: number; content: ContentFingerprint; probes: Probe[] };

const KEEP_RUNS = 200;

type ProbeSetRow = { id: unknown; store: string; generator_version: unknown; seed: unknown; created_at: unknown; content_json: string; probes_json: string };

function probeSetOf(r: ProbeSetRow): StoredProbeSet {
  const content = JSON.parse(r.content_json) as { fingerprint: ContentFingerprint; perKind: number };
  return { id: num(r.id), store: r.store, generatorVersion: num(r.generator_version), seed: num(r.seed), perKind: content.perKind, createdAt: num(r.created_at), content: content.fingerprint, probes: JSON.parse(r.probes_json) as Probe[] };
}

export async function latestProbeSet({ store }: { store: string }): Promise<StoredProbeSet | null> {
  const row = await govRow<ProbeSetRow>(sql`select * from self_recall_probe_sets where store = ${store} order by id desc limit 1`);
  return row ? probeSetOf(row) : null;
}

export async function saveProbeSet({ store, seed, perKind, content, probes, generatorVersion }: { store: string; seed: number; perKind: number; content: ContentFingerprint; probes: Probe[]; generatorVersion: number }): Promise<StoredProbeSet> {
  const createdAt = Date.now();
  const row = await govRow<{ id: unknown }>(
    sql`insert into self_recall_probe_sets (store, generator_version, seed, created_at, content_json, probes_json)
        values (${store}, ${generatorVersion}, ${seed}, ${createdAt}, ${JSON.stringify({ fingerprint: content, perKind })}, ${JSON.stringify(probes)}) returning id`,
  );
  return { id: num(row!.id), store, generatorVersion, seed, perKind, createdAt, content, probes };
}

/** A self_recall_runs row: the run's columns (numbers as PostgreSQL's bigints may come, text), its settings and results as JSON. */
type RunRow = Omit<SelfRecallRun, "settings" | "results"> & { settings_json: string; results_json: string };

/** Some keys optional: a run stored before the snake_case spelling has them under their old names. */
type Respelled<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;
type StoredSearch = Respelled<EvalSettings["search"], "default_mode" | "chunking_version" | "fusion_weights"> & { defaultMode?: string; chunkingVersion?: number; fusionWeights?: unknown };
type StoredSettings = Respelled<Omit<EvalSettings, "search">, "per_kind" | "generator_version"> & { perKind?: number; generatorVersion?: number; search: StoredSearch };
type StoredCost = Partial<NonNullable<EvalResults["cost"]>> & { busyMs?: number; pausedMs?: number; cpuShare?: number };
type StoredResults = Respelled<Omit<EvalResults, "cost">, "by_kind"> & { byKind?: EvalResults["by_kind"]; cost?: StoredCost };

/** A run's settings_json, in either spelling. */
function settingsOf(json: string): EvalSettings {
  const { perKind, generatorVersion, search, ...settings } = JSON.parse(json) as StoredSettings;
  const { defaultMode, chunkingVersion, fusionWeights, ...rest } = search;
  return {
    ...settings,
    per_kind: settings.per_kind ?? perKind ?? 0,
    generator_version: settings.generator_version ?? generatorVersion ?? 0,
    search: { ...rest, default_mode: rest.default_mode ?? defaultMode ?? "", chunking_version: rest.chunking_version ?? chunkingVersion ?? 0, fusion_weights: (rest.fusion_weights ?? fusionWeights) as EvalSettings["search"]["fusion_weights"] },
  };
}

/** A run's results_json, in either spelling (runs stored before their cost was measured have none). */
function resultsOf(json: string): EvalResults {
  const { byKind, cost, ...results } = JSON.parse(json) as StoredResults;
  return {
    ...results,
    by_kind: results.by_kind ?? byKind ?? {},
    ...(cost ? { cost: { busy_ms: cost.busy_ms ?? cost.busyMs ?? 0, paused_ms: cost.paused_ms ?? cost.pausedMs ?? 0, cpu_share: cost.cpu_share ?? cost.cpuShare ?? 1 } } : {}),
  };
}

function runOf({ settings_json, results_json, ...r }: RunRow): SelfRecallRun {
  const [id, probeSetId, ts, probes, durationMs] = [r.id, r.probe_set_id, r.ts, r.probes, r.duration_ms].map(num);
  const [hit1, hit10, mrr10, noise] = [r.hit1, r.hit10, r.mrr10, r.noise].map(numOrNull);
  return { ...r, id, probe_set_id: probeSetId, ts, probes, hit1, hit10, mrr10, noise, duration_ms: durationMs, settings: settingsOf(settings_json), results: resultsOf(results_json) };
}

export async function saveRun(run: Omit<SelfRecallRun, "id" | "probes" | "hit1" | "hit10" | "mrr10" | "noise">): Promise<SelfRecallRun> {
  const o: Score | null = run.results.overall;
  const row = await govRow<{ id: unknown }>(
    sql`insert into self_recall_runs (store, job_id, probe_set_id, target, fingerprint_id, model, ts, actor, trigger, probes, hit1, hit10, mrr10, noise, settings_json, results_json, duration_ms)
        values (${run.store}, ${run.job_id}, ${run.probe_set_id}, ${run.target}, ${run.fingerprint_id}, ${run.model}, ${run.ts}, ${run.actor}, ${run.trigger},
                ${o?.probes ?? 0}, ${o?.hit1 ?? null}, ${o?.hit10 ?? null}, ${o?.mrr10 ?? null}, ${o?.noise ?? null},
                ${JSON.stringify(run.settings)}, ${JSON.stringify(run.results)}, ${run.duration_ms}) returning id`,
  );
  const id = num(row!.id);
  await govRun(sql`delete from self_recall_runs where store = ${run.store} and id <= ${id - KEEP_RUNS}`);
  await govRun(sql`delete from self_recall_probe_sets where store = ${run.store} and id not in (select probe_set_id from self_recall_runs where store = ${run.store})
                     and id < (select max(id) from self_recall_probe_sets where store = ${run.store})`);
  return { ...run, id, probes: o?.probes ?? 0, hit1: o?.hit1 ?? null, hit10: o?.hit10 ?? null, mrr10: o?.mrr10 ?? null, noise: o?.noise ?? null };
}

/** A store's runs, newest first. */
export async function listRuns({ store, limit = 50, target }: { store: string; limit?: number; target?: EvalTarget }): Promise<SelfRecallRun[]> {
  const ofTarget = target ? sql` and target = ${target}` : sql``;
  return (await govRows<RunRow>(sql`select * from self_recall_runs where store = ${store}${ofTarget} order by id desc limit ${limit}`)).map(runOf);
}

/** The newest run of a store for a target and model on one probe set (the gate's two sides). */
export async function latestRunFor({ store, target, fingerprintId, probeSetId }: { store: string; target: EvalTarget; fingerprintId: string; probeSetId: number }): Promise<SelfRecallRun | null> {
  const row = await govRow<RunRow>(
    sql`select * from self_recall_runs where store = ${store} and target = ${target} and fingerprint_id = ${fingerprintId} and probe_set_id = ${probeSetId} order by id desc limit 1`,
  );
  return row ? runOf(row) : null;
}

/** The newest active run of each store (Health, Prometheus). */
export async function latestActiveRuns(): Promise<SelfRecallRun[]> {
  const rows = await govRows<RunRow>(
    sql`select r.* from self_recall_runs r where r.target = 'active' and r.id = (select max(k.id) from self_recall_runs k where k.store = r.store and k.target = 'active') order by r.store`,
  );
  return rows.map(runOf);
}
