import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { toWire } from "@/lib/api/contract";
import { reembedEstimate, storeHealthResponse } from "@/lib/api/responses/embeddings";
import { selfRecallResponse } from "@/lib/api/responses/self-recall";
import { artifactProofsResponse, overrideRecordedResponse, runFinishedResponse, runRecordedResponse, taskCreatedResponse, taskListResponse, taskStatusResponse, validationRecordedResponse } from "@/lib/api/responses/ledger";
import { dialecticMetricsResponse, messagePostedResponse, sessionCreatedResponse, sessionListResponse, sessionResponse, signatureCheckResponse } from "@/lib/api/responses/dialectic";
import { rememberResponse } from "@/lib/api/responses/graph";
import { learning, learningListResponse, recallResponse, reflectionOverviewResponse, trace, traceListResponse } from "@/lib/api/responses/recall";
import { storeSummary, tokenCreatedResponse, tokenListResponse } from "@/lib/api/responses/stores";
import { governance } from "@/lib/backend/governance";
import { getEmbedder } from "@/lib/embed/model";
import { getSelfRecall } from "@/lib/eval/self-recall";
import { graphBackend } from "@/lib/graph/backend";
import { getDialecticMetrics } from "@/lib/metrics/dialectic";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { recallBackend } from "@/lib/recall/backend";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { stores } from "@/lib/stores/backend";
import { drainEmbeddings, governanceSql, seedDocument, seedStore, seedThought, seedTrace, useTestBackend, type TestEnv } from "./backend";

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
