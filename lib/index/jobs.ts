import { randomUUID } from "node:crypto";
import { appendAudit } from "../governance/audit";
import { log } from "../log";
import { reindexStoreAsync, type ReindexProgress, type ReindexResult } from "./reindex";

/** Admin jobs run in this process; their state lives in memory (a restart forgets finished jobs). */
export type Job = {
  id: string;
  kind: "reindex";
  store: string;
  actor: string;
  status: "running" | "succeeded" | "failed";
  progress: ReindexProgress | null;
  result: ReindexResult | null;
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
};

const MAX_KEPT = 200;
const g = globalThis as unknown as { __dualmindJobs?: Map<string, Job> };
function jobs(): Map<string, Job> {
  g.__dualmindJobs ??= new Map();
  return g.__dualmindJobs;
}

export function getJobById({ id }: { id: string }): Job | null {
  const job = jobs().get(id);
  return job ? { ...job } : null;
}

/** Latest job per store (for the admin panel after a reload). */
export function listLatestJobs(): Job[] {
  const latest = new Map<string, Job>();
  for (const j of jobs().values()) latest.set(j.store, { ...j });
  return [...latest.values()];
}

/**
 * Start a reindex in the background and return at once; poll getJobById.
 * Audited when started, with who asked; the outcome is logged.
 */
export function startReindexJob({ store, actor, reason }: { store: string; actor: string; reason?: string }): Job {
  for (const j of jobs().values()) {
    if (j.store === store && j.status === "running") return { ...j };
  }
  const job: Job = { id: randomUUID(), kind: "reindex", store, actor, status: "running", progress: null, result: null, error: null, startedAt: Date.now(), finishedAt: null };
  appendAudit({ actor, action: "store.reindex", target: `store:${store}`, reason: reason ?? null, details: { jobId: job.id } });
  jobs().set(job.id, job);
  if (jobs().size > MAX_KEPT) jobs().delete(jobs().keys().next().value as string);
  reindexStoreAsync({ store, onProgress: (p) => (job.progress = p) })
    .then((result) => {
      job.result = result;
      job.status = "succeeded";
    })
    .catch((e: unknown) => {
      job.status = "failed";
      job.error = e instanceof Error ? e.message : String(e);
      log("error", "reindex job failed", { store, jobId: job.id, error: e instanceof Error ? e.stack : String(e) });
    })
    .finally(() => {
      job.finishedAt = Date.now();
    });
  return { ...job };
}
