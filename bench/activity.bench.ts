/**
 * The activity explorer over a large audit log (BENCH_ACTIVITY_ROWS, default
 * 1M rows in a temp governance.db): each filter a reviewer uses, in-process,
 * beside the plainest query of the same log (its newest 50 rows by primary
 * key) in the same run. Rows are written straight into audit_log (the chain's
 * hashes are not what is measured here): 500 agents with a few very active
 * ones, 30 actions, 40 stores, one row every ~3 s of simulated time.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { percentile, printTable } from "./table";

const ROWS = Number(process.env.BENCH_ACTIVITY_ROWS ?? 1_000_000);
const RUNS = 30;

export default async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dm-bench-activity-"));
  process.env.DATA_DIR = dataDir;
  const { getGovernance, closeAllDatabases } = await import("../lib/db/connection");
  const { activityFilterSchema, activitySummarySchema, listActivity, summarizeActivity } = await import("../lib/governance/activity");
  try {
    const { sqlite } = getGovernance();
    const insert = sqlite.prepare("insert into audit_log (ts, actor, action, target, reason, details, prev_hash, hash) values (?, ?, ?, ?, null, ?, 'x', 'x')");
    const actions = ["memory.create", "memory.update", "memory.delete", "graph.node.delete", "thought.delete", "store.create", "ledger.override", "dialectic.abandon", "token.create", "user.role"];
    const extra = Array.from({ length: 20 }, (_, i) => `job.kind${i}`);
    const allActions = [...actions, ...extra];
    const start = Date.now() - ROWS * 3000;
    const seeded = performance.now();
    let rng = 42;
    const rand = () => ((rng = (rng * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    sqlite.transaction(() => {
      for (let i = 0; i < ROWS; i++) {
        // A few busy agents do most of the work; "rare-agent" acts every ~100k rows.
        const agent = i % 100_000 === 7 ? "rare-agent" : rand() < 0.5 ? `busy-${Math.floor(rand() * 5)}` : `agent-${Math.floor(rand() * 495)}`;
        const action = rand() < 0.6 ? "memory.create" : allActions[Math.floor(rand() * allActions.length)]!;
        const store = `store-${Math.floor(rand() * 40)}`;
        insert.run(start + i * 3000, `agent:${agent}`, action, `store:${store}/memory:notes/n${i}`, JSON.stringify({ n: i }));
      }
    })();
    const seedS = (performance.now() - seeded) / 1000;
    const newest = start + (ROWS - 1) * 3000;

    const cases: { name: string; run: () => unknown }[] = [
      { name: "baseline: newest 50 by primary key", run: () => sqlite.prepare("select * from audit_log order by id desc limit 50").all() },
      { name: "newest page, no filter", run: () => listActivity({ filter: activityFilterSchema.parse({}) }) },
      { name: "busy agent", run: () => listActivity({ filter: activityFilterSchema.parse({ agent: "busy-1" }) }) },
      { name: "rare agent (one row per 100k)", run: () => listActivity({ filter: activityFilterSchema.parse({ agent: "rare-agent" }) }) },
      { name: "action family memory. + store", run: () => listActivity({ filter: activityFilterSchema.parse({ action: "memory.", store: "store-3" }) }) },
      { name: "rare action, whole window", run: () => listActivity({ filter: activityFilterSchema.parse({ action: "job.kind7", store: "store-9" }) }) },
      { name: "last night (8 h ago to 2 h ago)", run: () => listActivity({ filter: activityFilterSchema.parse({ since: newest - 8 * 3_600_000, until: newest - 2 * 3_600_000 }) }) },
      { name: "summary: busy agent, last 24 h", run: () => summarizeActivity({ filter: activitySummarySchema.parse({ agent: "busy-1", since: newest - 86_400_000 }) }) },
      { name: "summary: rare agent, all time", run: () => summarizeActivity({ filter: activitySummarySchema.parse({ agent: "rare-agent" }) }) },
    ];
    const rows: Record<string, string | number>[] = [];
    let baseP50 = 0;
    for (const c of cases) {
      const samples: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await c.run();
        samples.push(performance.now() - t);
      }
      const p50 = percentile(samples, 50);
      if (rows.length === 0) baseP50 = p50;
      rows.push({ query: c.name, "p50 ms": p50, "p95 ms": percentile(samples, 95), "× baseline p50": p50 / baseP50 });
    }
    printTable(`Activity explorer over ${ROWS.toLocaleString("en")} audit rows (SQLite, in-process, ${RUNS} runs each; seeded in ${seedS.toFixed(1)} s)`, rows);
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
