import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { toWire } from "@/lib/api/contract";
import { chunkDetail, documentListResponse, jobResponse, memoryListResponse, memoryTrashResponse, memoryWithBody, putDocumentsResponse, searchResponse, trashedMemoryWithBody, verifyResponse } from "@/lib/api/responses/documents";
import { embeddingStatusResponse, fingerprint, reembedEstimate, reembedProgress, storeHealthResponse } from "@/lib/api/responses/embeddings";
import { evaluationJob, selfRecallResponse } from "@/lib/api/responses/self-recall";
import { artifactProofsResponse, overrideRecordedResponse, runFinishedResponse, runRecordedResponse, taskCreatedResponse, taskListResponse, taskStatusResponse, validationRecordedResponse } from "@/lib/api/responses/ledger";
import { dialecticMetricsResponse, messagePostedResponse, sessionCreatedResponse, sessionListResponse, sessionResponse, signatureCheckResponse } from "@/lib/api/responses/dialectic";
import { rememberResponse } from "@/lib/api/responses/graph";
import { learning, learningListResponse, recallResponse, reflectionOverviewResponse, trace, traceListResponse } from "@/lib/api/responses/recall";
import { storeSummary, tokenCreatedResponse, tokenListResponse } from "@/lib/api/responses/stores";
import { governance } from "@/lib/backend/governance";
import { getEmbedder } from "@/lib/embed/model";
import { getEvaluationJob } from "@/lib/eval/jobs";
import { getSelfRecall } from "@/lib/eval/self-recall";
import { graphBackend } from "@/lib/graph/backend";
import { memoryFilterSchema } from "@/lib/index/memories";
import { searchInputSchema } from "@/lib/index/search";
import { getDialecticMetrics } from "@/lib/metrics/dialectic";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { recallBackend } from "@/lib/recall/backend";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { stores } from "@/lib/stores/backend";
import { drainEmbeddings, embeddingStatusOf, governanceSql, itSqliteOnly, onPg, seedDocument, seedStore, seedThought, seedTrace, storeSql, useTestBackend, type TestEnv } from "./backend";

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

  it("a trace and a learning as recorded and listed, with their vectors (POST and GET /stores/{store}/traces, /learnings)", async () => {
    const failure = { intent: { verb: "rotate", target: "nginx TLS certificate" }, shard_type: "ops", key_files: ["etc/nginx.conf"], outcome: "failure" as const, key_issue: "reload kept the old certificate", error_tags: ["tls"] };
    const recorded = await seedTrace("docs", failure, "ops-agent");
    asWire(trace, recorded.trace);
    const made = await recallBackend().recordLearning({ store: "docs", agentId: "ops-agent", input: { predicate: "prefers", args: { reload: "restart" }, description: "Restart nginx after a certificate rotation", confidence: 0.8 } });
    asWire(learning, made.learning);
    await drainEmbeddings(["docs"]);
    const traces = await recallBackend().listTraces({ store: "docs", filter: {} });
    expect(traces.traces[0].vector).not.toBeNull();
    asWire(traceListResponse, traces);
    const learnings = await recallBackend().listLearnings({ store: "docs", filter: {} });
    expect(learnings.learnings[0].vector).not.toBeNull();
    asWire(learningListResponse, learnings);
  });

  it("a recall with its guidance and explain, then the reflection overview's counts, hourly metrics and totals (POST recall, GET reflection)", async () => {
    const recalled = await recallBackend().recall({ store: "docs", agentId: "ops-agent", input: { query: "rotate the nginx TLS certificate and reload", min_score: 0, explain: true } });
    expect(recalled.traces.length).toBeGreaterThan(0);
    expect(recalled.guidance.past_failure_warning).not.toBeNull();
    expect(recalled.guidance.aligned_preferences.length).toBeGreaterThan(0);
    asWire(recallResponse, recalled);
    const overview = await recallBackend().getReflectionOverview({ store: "docs" });
    expect(overview.metrics.length).toBeGreaterThan(0);
    asWire(reflectionOverviewResponse, overview);
  });

  it("remember's explain (POST /stores/{store}/remember explain=true)", async () => {
    await seedThought("docs", { content: "The nginx certificate rotation needs a restart, not a reload" });
    const remembered = await graphBackend().remember({ store: "docs", input: { query: "nginx certificate restart", explain: true } });
    expect(remembered.explain?.stages.length).toBeGreaterThan(0);
    asWire(rememberResponse, remembered);
  });

  it("an agent token as created, listed and revoked (POST, GET /tokens, DELETE /tokens/{id})", async () => {
    const { token, info } = await governance().createApiToken({ input: { label: "wire", agent_id: "wire-agent", scopes: ["read"], stores: ["docs"] }, actor: "test" });
    asWire(tokenCreatedResponse, { token, ...info });
    await governance().verifyApiToken({ token });
    await governance().revokeApiToken({ id: info.id, actor: "test" });
    const tokens = await governance().listApiTokens({});
    expect(tokens.find((t) => t.id === info.id)).toMatchObject({ last_used_at: expect.any(Number), revoked_at: expect.any(Number) });
    asWire(tokenListResponse, { tokens });
  });

  it("a search answer: hits, passages, signals, vectors, fusion and explain (GET/POST /stores/{store}/search)", async () => {
    await seedDocument("docs", "runbooks/backup.md", "# Backups\n\nThe nightly backup copies the database to the vault.\n\n## Restore\n\nA restore reads the vault back into the database.");
    await drainEmbeddings(["docs"]);
    for (const input of [{ q: "backup vault", mode: "hybrid", group: "document", explain: true }, { q: "backup vault", mode: "fts", limit: 1 }]) {
      const result = await stores().search({ store: "docs", input: searchInputSchema.parse(input) });
      expect(result.results.length).toBeGreaterThan(0);
      if (input.mode === "hybrid") expect(result).toMatchObject({ effective_mode: "hybrid", fusion: expect.any(Object), vectors: expect.any(Object), explain: expect.any(Object), results: [{ passages: expect.any(Array), signals: { document: expect.any(Object) } }] });
      asWire(searchResponse, result);
    }
  });

  it("memories and the trash (GET/POST/PUT /stores/{store}/memories, GET /stores/{store}/memories/trash)", async () => {
    const created = await stores().createMemory({ store: "docs", input: { path: "ops/rota", body: "who is on call", tags: ["pager"], expires_at: Date.UTC(2030, 0, 1) }, actor: "test" });
    asWire(memoryWithBody, created);
    asWire(memoryListResponse, await stores().listMemories({ store: "docs", filter: memoryFilterSchema.parse({}) }));
    await stores().deleteMemory({ store: "docs", memoryPath: "ops/rota", actor: "test" });
    const trash = await stores().listMemoryTrash({ store: "docs" });
    asWire(memoryTrashResponse, { retention_days: 30, trash });
    asWire(trashedMemoryWithBody, await stores().getTrashedMemory({ store: "docs", id: trash[0].id }));
  });

  it("documents and chunks (PUT/GET /stores/{store}/documents, GET /stores/{store}/chunks/{id})", async () => {
    asWire(putDocumentsResponse, { documents: await stores().putDocuments({ store: "docs", input: { path: "notes/b.md", content: "# b\n\nmore words" }, actor: "test" }) });
    asWire(documentListResponse, await stores().listDocuments({ store: "docs", prefix: "", limit: 10, offset: 0 }));
    const [hit] = (await stores().search({ store: "docs", input: searchInputSchema.parse({ q: "more words", mode: "fts" }) })).results;
    asWire(chunkDetail, await stores().getChunk({ store: "docs", chunkId: hit.chunk_id }));
  });

  it("verify and the reindex job (GET /stores/{store}/verify, POST /stores/{store}/reindex, GET /jobs/{id})", async () => {
    asWire(verifyResponse, await stores().verifyStore({ store: "docs" }));
    const job = await stores().runReindex({ store: "docs", actor: "test" });
    expect(job.status).toBe("succeeded");
    asWire(jobResponse, { job });
  });

  it("a reindex job recorded in the older camelCase spelling reads as the wire spells it", async () => {
    const id = "33333333-3333-4333-8333-333333333333";
    const counts = { scanned: 2, added: 1, changed: 0, unchanged: 1, removed: 0, skipped: 1 };
    const kind = { scanned: 1, added: 1, changed: 0, unchanged: 0, removed: 0 };
    const old = { store: "docs", counts, byKind: { documents: kind, memories: kind }, skippedBy: { binary: 0, oversized: 0, badName: 1, symlink: 0 }, linksOutsideRoot: ["memory/x.md"], changedPaths: ["a.md"], durationMs: 12 };
    await governanceSql("insert into admin_jobs (id, kind, store, actor, status, owner, attempts, result_json, started_at, heartbeat_at, finished_at) values (?, 'reindex', 'docs', 'test', 'succeeded', 'x', 1, ?, 1, 2, 3)", [id, JSON.stringify(old)]);
    const job = await stores().getJob({ id, stores: null });
    expect(job?.result).toEqual({ store: "docs", counts, by_kind: { documents: kind, memories: kind }, skipped_by: { binary: 0, oversized: 0, bad_name: 1, symlink: 0 }, links_outside_root: ["memory/x.md"], changed_paths: ["a.md"], duration_ms: 12 });
    expect(job).toMatchObject({ started_at: 1, heartbeat_at: 2, finished_at: 3 });
    asWire(jobResponse, { job });
  });
});

describe("governance answers spelled as the wire spells them", () => {
  const HASH = "a".repeat(64);
  const caller = (agentId: string) => ({ agentId, isAdmin: false, stores: null });

  it("a task, its runs, validations, overrides and provenance (POST/GET /tasks, /overrides, /provenance and their MCP tools)", async () => {
    const g = governance();
    asWire(taskCreatedResponse, await g.createTask({ input: { task_id: "w1", intent: "casing", spec: { a: 1 }, assignees: ["agent-b"] }, requestedBy: "agent-a" }));
    asWire(runRecordedResponse, await g.recordRunStart({ taskId: "w1", input: { run_id: "r1", skill: "lint", input_hash: HASH, runner_version: "1" }, caller: caller("agent-a") }));
    const artifacts = [{ artifact_type: "doc", artifact_id: "d1", store: "docs" }];
    asWire(runFinishedResponse, await g.recordRunFinish({ taskId: "w1", runId: "r1", input: { output_hash: HASH, exit_code: 0, artifacts }, caller: caller("agent-b") }));
    asWire(validationRecordedResponse, await g.recordValidation({ taskId: "w1", input: { validation_id: "v1", run_id: "r1", critic_passed: true, runner_passed: null, details: { ok: 1 } }, caller: caller("agent-b") }));
    asWire(overrideRecordedResponse, await g.recordOverride({ input: { override_id: "o1", task_id: "w1", note: "ship it" }, actor: "agent-a", tokenLabel: "a", caller: caller("agent-a") }));
    await g.recordProvenanceBatch({ input: { records: [{ artifact_type: "doc", artifact_id: "d1", store: "docs", model_name: "m", input_hash: HASH, task_id: "w1", run_id: "r1" }] }, recordedBy: "agent-a", caller: caller("agent-a") });
    const status = await g.getTaskStatus({ taskId: "w1", caller: caller("agent-a") });
    expect(status.runs).toHaveLength(1);
    expect(status.artifacts.length).toBeGreaterThan(0);
    asWire(taskStatusResponse, status);
    asWire(taskListResponse, await g.listTasks({ input: {}, caller: caller("agent-a") }));
    const proofs = await g.getProofsByArtifact({ input: { artifact_type: "doc", artifact_id: "d1" }, caller: caller("agent-a") });
    expect(proofs.tasks).toHaveLength(1);
    asWire(artifactProofsResponse, proofs);
  });

  it("a dialectic session through to resolution, its messages, list, signature check and metrics (/dialectic routes and MCP tools)", async () => {
    const g = governance();
    asWire(sessionCreatedResponse, await g.createDialecticSession({ input: { session_id: "ws", topic: "casing", reviewer_agent_id: "agent-b" }, agentId: "agent-a" }));
    asWire(messagePostedResponse, await g.postDialecticMessage({ sessionId: "ws", agentId: "agent-a", input: { message_type: "thesis", reasoning: "r", root_cause: "c", observed_metrics: { p95Ms: 3 } } }));
    await g.postDialecticMessage({ sessionId: "agent-a~ws", agentId: "agent-b", input: { message_type: "antithesis", reasoning: "r", concerns: ["x"] } });
    await g.postDialecticMessage({ sessionId: "ws", agentId: "agent-a", input: { message_type: "synthesis", reasoning: "r", proposed_conditions: ["c1"], agrees: true } });
    const resolved = await g.postDialecticMessage({ sessionId: "agent-a~ws", agentId: "agent-b", input: { message_type: "synthesis", reasoning: "ok", agrees: true } });
    expect(resolved.session.resolution).toMatchObject({ conditions: ["c1"], agreed_by: ["agent-a", "agent-b"], seq: 4 });
    asWire(messagePostedResponse, resolved);
    const view = await g.getDialecticSession({ sessionId: "agent-a~ws" });
    asWire(sessionResponse, { session: { ...view, messages: undefined } });
    asWire(sessionListResponse, await g.listDialecticSessions({ agentId: "agent-a", includeTranscript: true }));
    asWire(signatureCheckResponse, await g.verifyDialecticSession({ sessionId: "agent-a~ws" }));
    await governanceSql("update dialectic_messages set reasoning = 'edited' where session_id = 'agent-a~ws' and seq = 2");
    const broken = await g.verifyDialecticSession({ sessionId: "agent-a~ws" });
    expect(broken).toMatchObject({ ok: false, broken_at_seq: 2 });
    asWire(signatureCheckResponse, broken);
    asWire(dialecticMetricsResponse, await getDialecticMetrics());
  });

  it("a resolution stored before sessions were spelled in snake_case still reads whole", async () => {
    const g = governance();
    await g.createDialecticSession({ input: { session_id: "old-res", topic: "old" }, agentId: "agent-a" });
    await governanceSql("update dialectic_sessions set phase = 'resolved', status = 'resolved', resolution_json = ? where session_id = ?", [JSON.stringify({ conditions: ["keep"], agreedBy: ["agent-a", "agent-b"], messageId: "m9", seq: 9 }), "agent-a~old-res"]);
    const view = await g.getDialecticSession({ sessionId: "agent-a~old-res" });
    expect(view.resolution).toEqual({ conditions: ["keep"], agreed_by: ["agent-a", "agent-b"], message_id: "m9", seq: 9 });
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
