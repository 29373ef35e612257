import { sql } from "drizzle-orm";
import { getConfig } from "../config";
import { archivedStores } from "../db/store-lifecycle";
import { AppError } from "../errors";
import { log } from "../log";
import { stores } from "../stores/backend";
import { storeReader } from "./content";
import { govRow, num } from "./db";
import type { EvaluateEvery, EvaluationSchedule } from "./report";

/**
 * Evaluations nobody asked for (docs/self-recall.md): after a reindex and
 * every day or week. Whether a store is due is read from the shared jobs
 * table, and the job is claimed only if no evaluation of the store started
 * since it fell due (one insert, guarded by the one-running-per-store index),
 * so N replicas start one run per store per period.
 */
export type EvaluationTrigger = "on demand" | "after reindex" | "scheduled" | "switch gate";

const DAY_MS = 86_400_000;
const PERIOD_MS: Record<EvaluateEvery, number | null> = { off: null, "after-reindex": null, daily: DAY_MS, weekly: 7 * DAY_MS };
export const SCHEDULE_TICK_MS = 60_000;
/** An evaluation after a reindex waits for the reindex's vectors (an empty embed queue), at most this long. */
export const AFTER_REINDEX_MAX_WAIT_MS = 60 * 60_000;

type JobTimes = { started_at: unknown; finished_at: unknown; result_json: string | null };

/** Did a finished reindex add, change or remove anything? (A reindex of an unchanged tree does not move self-recall.) */
function reindexChanged(resultJson: string | null): boolean {
  try {
    const counts = (JSON.parse(resultJson ?? "null") as { counts?: { added?: number; changed?: number; removed?: number } } | null)?.counts;
    return !counts || (counts.added ?? 0) + (counts.changed ?? 0) + (counts.removed ?? 0) > 0;
  } catch {
    return true;
  }
}

/** The store's next evaluation nobody asks for, from its last evaluation and its last reindex (both backends: one SQL text). */
export async function evaluationScheduleOf({ store, now = Date.now() }: { store: string; now?: number }): Promise<EvaluationSchedule> {
  const { every, cpuShare } = getConfig().selfRecall;
  const none: EvaluationSchedule = { every, cpu_share: cpuShare, next_due_at: null, next_trigger: null, waiting_for: null };
  if (every === "off") return none;
  const lastEval = await govRow<JobTimes>(sql`select started_at, finished_at, result_json from admin_jobs where store = ${store} and kind = 'evaluate' order by started_at desc limit 1`);
  const lastStart = lastEval ? num(lastEval.started_at) : 0;
  const reindex = await govRow<JobTimes>(
    sql`select started_at, finished_at, result_json from admin_jobs where store = ${store} and kind = 'reindex' and status = 'succeeded' and finished_at > ${lastStart} order by finished_at desc limit 1`,
  );
  if (reindex && reindexChanged(reindex.result_json)) {
    const finished = num(reindex.finished_at);
    const pending = now - finished < AFTER_REINDEX_MAX_WAIT_MS && (await embedBacklog(store)) > 0;
    return { ...none, next_due_at: pending ? null : finished, next_trigger: "after reindex", waiting_for: pending ? "the reindex's new vectors (the embed queue is not empty)" : null };
  }
  const period = PERIOD_MS[every];
  if (period === null) return none;
  // A store never evaluated is due at the next look.
  return { ...none, next_due_at: lastEval ? lastStart + period : now, next_trigger: "scheduled" };
}

async function embedBacklog(store: string): Promise<number> {
  const rows = await (await storeReader(store)).rows<{ one: unknown }>(sql`select 1 as one from embed_queue limit 1`);
  return rows.length;
}

/** The earliest start time a due run is claimed against: no evaluation of the store may have started since. */
export function dueSince(schedule: EvaluationSchedule, now: number): number | null {
  if (schedule.next_due_at === null || schedule.next_due_at > now || !schedule.next_trigger) return null;
  if (schedule.next_trigger === "after reindex") return schedule.next_due_at;
  return now - (PERIOD_MS[schedule.every] ?? 0);
}

type Starter = (a: { store: string; trigger: "after reindex" | "scheduled"; notSince: number; cpuShare: number }) => Promise<{ started: boolean }>;

/**
 * One look: every active store whose run is due is started (paced, in the
 * background) until DUALMIND_MAX_EVALUATIONS are running. Returns the stores
 * this process started. Never throws: a store that cannot be looked at is
 * logged and passed over.
 */
export async function runDueEvaluations({ start, now = Date.now() }: { start: Starter; now?: number }): Promise<string[]> {
  if (getConfig().selfRecall.every === "off") return [];
  const names = await stores().listStoreNames();
  const archived = await archivedStores(names);
  const started: string[] = [];
  for (const store of names.filter((s) => !archived.has(s))) {
    try {
      const schedule = await evaluationScheduleOf({ store, now });
      const notSince = dueSince(schedule, now);
      if (notSince === null || !schedule.next_trigger) continue;
      if ((await start({ store, trigger: schedule.next_trigger, notSince, cpuShare: schedule.cpu_share })).started) started.push(store);
    } catch (e) {
      // As many running as allowed: the rest wait for the next look.
      if (e instanceof AppError && e.code === "rate_limited") break;
      log("warn", "self-recall scheduler: could not start an evaluation", { store, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return started;
}

const g = globalThis as unknown as { __dualmindEvalScheduler?: NodeJS.Timeout };

/** Start the scheduler in this process (idempotent across Next dev reloads); `start` is startEvaluation bound by the caller. */
export function startEvaluationScheduler(start: Starter): void {
  if (g.__dualmindEvalScheduler || getConfig().selfRecall.every === "off") return;
  let looking = false;
  const tick = () => {
    if (looking) return;
    looking = true;
    void runDueEvaluations({ start })
      .catch((e: unknown) => log("error", "self-recall scheduler: the look failed", { error: e instanceof Error ? e.message : String(e) }))
      .finally(() => {
        looking = false;
      });
  };
  g.__dualmindEvalScheduler = setInterval(tick, SCHEDULE_TICK_MS);
  g.__dualmindEvalScheduler.unref();
}
