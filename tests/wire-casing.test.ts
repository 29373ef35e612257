import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { toWire } from "@/lib/api/contract";
import { embeddingStatusResponse, fingerprint, reembedEstimate, reembedProgress, storeHealthResponse } from "@/lib/api/responses/embeddings";
import { evaluationJob, selfRecallResponse } from "@/lib/api/responses/self-recall";
import { storeSummary } from "@/lib/api/responses/stores";
import { getEmbedder } from "@/lib/embed/model";
import { getEvaluationJob } from "@/lib/eval/jobs";
import { getSelfRecall } from "@/lib/eval/self-recall";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { stores } from "@/lib/stores/backend";
import { embeddingStatusOf, governanceSql, itSqliteOnly, onPg, seedDocument, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";

/**
 * The domain answers these routes return are already in the wire's snake_case: the response mapping
 * (lib/api/contract.ts toWire) passes them through key for key, so what a page, the CLI's --json and the
 * API show of them is spelled one way.
 */
const asWire = (schema: ZodType, value: unknown) => expect(toWire({ schema, value, opts: { undeclared: "keep" } })).toEqual(value);

let env: TestEnv;
beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("docs");
  await seedDocument("docs", "a.md", "# a\n\nsome words");
});
afterAll(async () => {
  await env.cleanup();
});

describe("answers spelled as the wire spells them", () => {
  it("a store's summary (GET /stores/{store})", async () => {
    asWire(storeSummary, await stores().describeStore({ store: "docs" }));
  });

  it("a re-embed's estimate (POST /stores/{store}/reembed dry_run) and the health report's backlog and drift", async () => {
    const configured = await getEmbedder().fingerprint;
    asWire(reembedEstimate, await embeddingsBackend().estimateReembed({ store: "docs", configured, onlyStale: false }));
    const report = await storeHealthReportFor({ store: "docs", principal: "operator" });
    asWire(storeHealthResponse.shape.backlog, report.backlog);
    asWire(storeHealthResponse.shape.parked, report.parked);
    expect(report.drift).not.toBeNull();
    asWire(storeHealthResponse.shape.drift, report.drift);
  });

  it("the embedding status of the store page's embeddings card (and `dualmind store status --json`)", async () => {
    asWire(embeddingStatusResponse, await embeddingStatusOf("docs"));
  });

  it("the self-recall report before the first run: its schedule (GET /stores/{store}/evaluate)", async () => {
    asWire(selfRecallResponse, await getSelfRecall({ store: "docs" }));
  });
});

/**
 * Rows written before these objects were spelled snake_case hold camelCase JSON (a re-embed job in the store's meta
 * row, a fingerprint in embedding_models, a self-recall run's settings and results, an evaluation job's result):
 * they still read, and come out in the wire's spelling.
 */
describe("rows stored in the old camelCase spelling", () => {
  const metaTable = onPg ? "store_meta" : "meta";
  const writeMeta = (store: string, key: string, value: string) =>
    storeSql(store, `insert into ${metaTable} (key, value) values (?, ?) on conflict (key) do update set value = excluded.value`, [key, value]);

  it("a re-embed job reads back, in GET /stores/{store}/reembed and the store's health", async () => {
    await seedStore("oldjob");
    const job = { targetFingerprintId: "0123456789abcdef", onlyStale: false, holdSwitch: true, total: 3, startedAt: 1_700_000_000_000, startedBy: "user:admin", status: "done", queuedUntil: 1_700_000_000_000, finishedAt: 1_700_000_060_000 };
    await writeMeta("oldjob", "reembed_job", JSON.stringify(onPg ? { ...job, queueIdUntil: 0 } : job));
    const progress = await embeddingsBackend().getReembedProgress({ store: "oldjob" });
    expect(progress).toMatchObject({ target_fingerprint_id: "0123456789abcdef", only_stale: false, hold_switch: true, total: 3, done: 3, remaining: 0, started_at: 1_700_000_000_000, started_by: "user:admin", status: "done", finished_at: 1_700_000_060_000 });
    expect(progress!.rate_per_sec).toBeCloseTo(3 / 60, 6);
    asWire(reembedProgress, progress);
    const report = await storeHealthReportFor({ store: "oldjob", principal: "operator" });
    asWire(storeHealthResponse.shape.reembed, report.reembed);
  });

  itSqliteOnly("a fingerprint in embedding_models reads back as the store's active model", "embedding_models is SQLite's (PostgreSQL names the active model by its id alone)", async () => {
    await seedStore("oldmodel");
    const stored = { provider: "openai", model: "e5", dimension: 64, metric: "cosine", documentPrefix: "passage: ", queryPrefix: "query: ", probeHash: "ab".repeat(32), id: "fedcba9876543210" };
    await storeSql("oldmodel", "insert into embedding_models (fingerprint_id, info, first_seen_at) values (?, ?, ?)", [stored.id, JSON.stringify(stored), 1_700_000_000_000]);
    await writeMeta("oldmodel", "active_fingerprint", stored.id);
    const report = await storeHealthReportFor({ store: "oldmodel", principal: "operator" });
    expect(report.active_model).toEqual({ provider: "openai", model: "e5", dimension: 64, metric: "cosine", document_prefix: "passage: ", query_prefix: "query: ", probe_hash: "ab".repeat(32), id: "fedcba9876543210" });
    asWire(fingerprint, report.active_model);
    asWire(fingerprint, report.configured_model);
  });

  it("a self-recall run's settings and results and an evaluation job's result read back; an old run beside a new one is no change", async () => {
    await seedStore("oldruns");
    const score = { probes: 10, hit1: 0.9, hit10: 1, mrr10: 0.95, noise: 0.03, fallbacks: 0 };
    const model = { provider: "builtin", model: "dualmind-hash-v1", dimension: 384 };
    const search = { group: "document", tokenizer: "unicode61 remove_diacritics 2" };
    const modes = { document: ["hybrid"] };
    const newSettings = { seed: 7, per_kind: 10, generator_version: 1, modes, search: { default_mode: "hybrid", ...search, chunking_version: 3, fusion_weights: { fts: 1, vec: 0.004 } }, model };
    const oldSettings = { seed: 7, perKind: 10, generatorVersion: 1, modes, search: { defaultMode: "hybrid", ...search, chunkingVersion: 3, fusionWeights: { fts: 1, vec: 0.004 } }, model };
    const newResults = { by_kind: { document: { hybrid: score } }, overall: score, gate: null, excluded: 0, cost: { busy_ms: 120, paused_ms: 0, cpu_share: 1 } };
    const oldResults = { byKind: { document: { hybrid: score } }, overall: score, gate: null, excluded: 0, cost: { busyMs: 120, pausedMs: 0, cpuShare: 1 } };
    const insertRun = (ts: number, settings: unknown, results: unknown) =>
      governanceSql(
        `insert into self_recall_runs (store, job_id, probe_set_id, target, fingerprint_id, model, ts, actor, trigger, probes, hit1, hit10, mrr10, noise, settings_json, results_json, duration_ms)
         values (?, null, 1, 'active', 'fp', 'builtin:dualmind-hash-v1', ?, 'user:admin', 'on demand', 10, 0.9, 1, 0.95, 0.03, ?, ?, 500)`,
        ["oldruns", ts, JSON.stringify(settings), JSON.stringify(results)],
      );
    await insertRun(1_700_000_000_000, newSettings, newResults);
    await insertRun(1_700_000_100_000, oldSettings, oldResults);
    const [{ id: runId }] = await governanceSql<{ id: number | string }>("select max(id) as id from self_recall_runs where store = ?", ["oldruns"]);
    await governanceSql(
      `insert into admin_jobs (id, kind, store, actor, reason, status, owner, attempts, result_json, started_at, heartbeat_at, finished_at)
       values ('old-evaluation', 'evaluate', 'oldruns', 'user:admin', 'on demand', 'succeeded', 'gone', 1, ?, ?, ?, ?)`,
      [JSON.stringify({ runId: Number(runId), target: "active", hit10: 1, mrr10: 0.95 }), 1_700_000_099_000, 1_700_000_100_000, 1_700_000_100_000],
    );
    const report = await getSelfRecall({ store: "oldruns" });
    expect(report.latest).toMatchObject({ id: Number(runId), settings: newSettings, results: newResults });
    expect(report.trend.map((p) => p.change)).toEqual([[], []]);
    expect(report.job?.result).toEqual({ run_id: Number(runId), target: "active", hit10: 1, mrr10: 0.95 });
    asWire(selfRecallResponse, report);
    asWire(evaluationJob, await getEvaluationJob({ id: "old-evaluation", store: "oldruns" }));
  });
});
