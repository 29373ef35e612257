import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as createTask } from "@/app/api/v1/tasks/route";
import { POST as createSession } from "@/app/api/v1/dialectic/sessions/route";
import { governance } from "@/lib/backend/governance";
import { POST as createMemory, PUT as updateMemory } from "@/app/api/v1/stores/[store]/memories/route";
import { governanceSql, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { POST as archiveStore } from "@/app/api/v1/stores/[store]/archive/route";
import { POST as unarchiveStore } from "@/app/api/v1/stores/[store]/unarchive/route";
import { POST as retryParked } from "@/app/api/v1/stores/[store]/embeddings/retry-parked/route";
import { POST as evaluateRoute } from "@/app/api/v1/stores/[store]/evaluate/route";
import { callRoute } from "./helpers";

/** One agent cannot fill the ledger for everyone: its own share (DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT) stops it first. */
let env: TestEnv;
let greedy = "";
let other = "";
const SHARE = 65536;

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT: String(SHARE) });
  greedy = await seedToken({ label: "g", agent_id: "greedy", scopes: ["write"] });
  other = await seedToken({ label: "o", agent_id: "other", scopes: ["write"] });
});
afterAll(async () => env?.cleanup());

const limitOf = (json: { error?: { details?: { limit?: string }[] } }) => json.error?.details?.[0]?.limit;
const spec = (i: number) => ({ text: `${i}`.padEnd(10_000, "x") });

describe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT", () => {
  it("refuses an agent past its share with 422 naming the limit, while another agent still writes", async () => {
    let refused: { status: number; json: { error?: { message: string; details?: { limit?: string }[] } } } | undefined;
    let created = 0;
    for (let i = 0; i < 20 && !refused; i++) {
      const r = await callRoute(createTask, { token: greedy, body: { task_id: `big-${i}`, intent: "fill", spec: spec(i) } });
      if (r.status === 201) created++;
      else refused = r;
    }
    expect(created).toBeGreaterThanOrEqual(2);
    expect(refused?.status).toBe(422);
    expect(refused?.json.error?.message).toContain("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT");
    expect(limitOf(refused!.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT");
    // Its reviews too: the share is the agent's whole ledger (small tasks use up what room a large one left).
    for (let i = 0; i < 100; i++) if ((await callRoute(createTask, { token: greedy, body: { task_id: `small-${i}`, intent: "x", spec: {} } })).status !== 201) break;
    const review = await callRoute(createSession, { token: greedy, body: { session_id: "after-full", topic: "t".repeat(500) } });
    expect(review.status).toBe(422);
    expect(limitOf(review.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT");
    // Nobody else is held back by it.
    expect((await callRoute(createTask, { token: other, body: { task_id: "mine", intent: "small", spec: { a: 1 } } })).status).toBe(201);

    // The running total per agent is what its rows take on disk, and no write took it past the share.
    const [usage] = await governanceSql<{ bytes: unknown }>("select bytes from agent_ledger_usage where agent_id = ?", ["greedy"]);
    expect(Number(usage.bytes)).toBeGreaterThan(SHARE - 30_000);
    expect(Number(usage.bytes)).toBeLessThanOrEqual(SHARE);
  });

  it("the audit rows of an agent's memory writes count toward its share: rewriting one memory stops there with 422, and other agents still write", async () => {
    await seedStore("notes");
    const rewriter = await seedToken({ label: "rw", agent_id: "rewriter", scopes: ["write"], stores: ["notes"] });
    const bystander = await seedToken({ label: "by", agent_id: "bystander", scopes: ["write"], stores: ["notes"] });
    const body = (i: number) => Array.from({ length: 110 }, (_, l) => `line ${l} of version ${i % 2}`).join("\n");
    expect((await callRoute(createMemory, { token: rewriter, params: { store: "notes" }, body: { path: "work/flip", body: body(0) } })).status).toBe(201);
    // Each update's audit row carries the body's diff: the store's bytes stay flat while the ledger grows.
    let refused: { status: number; json: { error?: { details?: { limit?: string }[] } } } | undefined;
    let updates = 0;
    for (let i = 1; i <= 200 && !refused; i++) {
      const r = await callRoute(updateMemory, { method: "PUT", token: rewriter, params: { store: "notes" }, body: { path: "work/flip", body: body(i) } });
      if (r.status === 200) updates++;
      else refused = r;
    }
    expect(updates).toBeGreaterThan(2);
    expect(refused?.status).toBe(422);
    expect(limitOf(refused!.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT");
    // Refused means nothing written: the memory and the audit log are as the last accepted update left them.
    const [{ n }] = await governanceSql<{ n: unknown }>("select count(*) as n from audit_log where actor = 'agent:rewriter' and action = 'memory.update'");
    expect(Number(n)).toBe(updates);
    expect((await callRoute(createMemory, { token: bystander, params: { store: "notes" }, body: { path: "work/mine", body: "still room for me" } })).status).toBe(201);
  });

  it("the server's own provenance (the embed worker's, for every store) is not held to an agent's share: vectors keep their facts past it", async () => {
    const record = (from: number) =>
      governance().recordProvenanceBatch({
        input: { records: Array.from({ length: 500 }, (_, j) => ({ artifact_type: "chunk_vector", artifact_id: String(from + j), store: "default", model_name: "builtin:hash", input_hash: "a".repeat(64) })) },
        recordedBy: "system:embed-worker",
      });
    for (let i = 0; i < 4; i++) expect(await record(i * 500)).toMatchObject({ inserted: 500 });
    const [usage] = await governanceSql<{ bytes: unknown }>("select bytes from agent_ledger_usage where agent_id = ?", ["system:embed-worker"]);
    expect(Number(usage.bytes)).toBeGreaterThan(SHARE);
    expect(await record(2000)).toMatchObject({ inserted: 500 });
  });

  it("a store-limited admin token's archive and unarchive loop stops at its share with 422 (their audit rows count and are checked), and other agents still write", async () => {
    await seedStore("shelf");
    const keeper = await seedToken({ label: "k", agent_id: "keeper", scopes: ["admin"], stores: ["shelf"] });
    let refused: { status: number; json: { error?: { details?: { limit?: string }[] } } } | undefined;
    let calls = 0;
    for (let i = 0; i < 2000 && !refused; i++) {
      const r = await callRoute(i % 2 === 0 ? archiveStore : unarchiveStore, { method: "POST", token: keeper, params: { store: "shelf" } });
      if (r.status === 200) calls++;
      else refused = r;
    }
    expect(calls).toBeGreaterThan(10);
    expect(refused?.status).toBe(422);
    expect(limitOf(refused!.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT");
    // Refused means not done: one audit row per accepted call, and the store is as the last accepted call left it.
    const [{ n }] = await governanceSql<{ n: unknown }>("select count(*) as n from audit_log where actor = 'agent:keeper' and action in ('store.archive', 'store.unarchive')");
    expect(Number(n)).toBe(calls);
    // Its other audited admin actions are refused too, with any of its tokens; nobody else is held back.
    await seedStore("shelf2");
    const keeper2 = await seedToken({ label: "k2", agent_id: "keeper", scopes: ["admin"], stores: ["shelf2"] });
    const retried = await callRoute(retryParked, { method: "POST", token: keeper2, params: { store: "shelf2" } });
    expect(retried.status).toBe(422);
    expect(limitOf(retried.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT");
    // An evaluation refused at its audit row leaves no job behind that would hold the store's evaluations.
    const evaluation = await callRoute(evaluateRoute, { method: "POST", token: keeper2, params: { store: "shelf2" }, body: {} });
    expect(evaluation.status).toBe(422);
    expect(await governanceSql("select id from admin_jobs where kind = 'evaluate' and store = 'shelf2'")).toHaveLength(0);
    expect((await callRoute(createTask, { token: other, body: { task_id: "after-keeper", intent: "small", spec: {} } })).status).toBe(201);
  });

  it("concurrent audited calls of one agent pass its share by at most one row (the share is read under the audit chain's lock)", async () => {
    await seedStore("race");
    const racer = await seedToken({ label: "r", agent_id: "racer", scopes: ["admin"], stores: ["race"] });
    const answers = await Promise.all(Array.from({ length: 300 }, () => callRoute(retryParked, { method: "POST", token: racer, params: { store: "race" } })));
    const accepted = answers.filter((r) => r.status === 200).length;
    const refused = answers.filter((r) => r.status === 422 && limitOf(r.json) === "DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT").length;
    expect(accepted).toBeGreaterThan(10);
    expect(accepted + refused).toBe(300);
    const [usage] = await governanceSql<{ bytes: unknown }>("select bytes from agent_ledger_usage where agent_id = ?", ["racer"]);
    const perRow = Number(usage.bytes) / accepted;
    // Each call was let through only while the agent was within its share: at most the last one lands past it.
    expect(Number(usage.bytes)).toBeGreaterThan(SHARE);
    expect(Number(usage.bytes) - SHARE).toBeLessThanOrEqual(1.5 * perRow);
  });
});
