import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as activityGET } from "@/app/api/v1/activity/route";
import { GET as summaryGET } from "@/app/api/v1/activity/summary/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import { POST as tasksPOST } from "@/app/api/v1/tasks/route";
import { POST as validationsPOST } from "@/app/api/v1/tasks/[id]/validations/route";
import type { ActivityEntry } from "@/lib/governance/activity";
import { flushRetrievalCounts, pruneRetrievalCounts, saveRetrievalCounts } from "@/lib/governance/retrieval-counts";
import { getGovernance } from "@/lib/db/connection";
import { getPg } from "@/lib/db/pg";
import { runTool } from "@/lib/mcp/server";
import { callRoute } from "./helpers";
import { asAnotherReplica, governanceSql, principalOf, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { patience } from "./fixtures/patience";

let env: TestEnv;
let admin: string;
let bob: string;
let builder: string;
let critic: string;

const url = (path: string, q: Record<string, string | number>) => `http://127.0.0.1/api/v1${path}?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`;
const summary = async (q: Record<string, string | number>) => {
  const res = await callRoute(summaryGET, { url: url("/activity/summary", q), token: admin });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json as { writes: number; reviews: number; failures: number; retrieval: { kind: string; count: number; failures: number }[] };
};
const byKind = (s: { retrieval: { kind: string; count: number; failures: number }[] }) => Object.fromEntries(s.retrieval.map((t) => [t.kind, [t.count, t.failures]]));
const ledgerHandle = async () => (getPg() ? await getPg()! : getGovernance());

beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("photos");
  admin = await seedToken({ label: "ops", agent_id: "ops", scopes: ["admin"] });
  bob = await seedToken({ label: "bob", agent_id: "bob", scopes: ["write"] });
  builder = await seedToken({ label: "builder", agent_id: "builder", scopes: ["write"] });
  critic = await seedToken({ label: "critic", agent_id: "critic", scopes: ["write"] });
  const ok = (r: { status: number; json: unknown }) => expect(r.status, JSON.stringify(r.json)).toBe(200);
  ok(await callRoute(searchRoute.POST, { token: bob, params: { store: "default" }, body: { q: "nightly backups", mode: "fts" } }));
  ok(await callRoute(searchRoute.GET, { token: bob, params: { store: "default" }, url: url("/stores/default/search", { q: "restic", mode: "fts" }) }));
  ok(await callRoute(searchRoute.POST, { token: bob, params: { store: "photos" }, body: { q: "leica", mode: "fts" } }));
  ok(await callRoute(recallRoute.POST, { token: bob, params: { store: "default" }, body: { query: "auth token refresh keeps failing" } }));
  ok(await callRoute(rememberRoute.POST, { token: bob, params: { store: "default" }, body: { query: "when do backups run" } }));
  // A store that is not there: a failed search, counted under no store (the made-up name is never a key).
  expect((await callRoute(searchRoute.POST, { token: bob, params: { store: "no-such-store" }, body: { q: "x", mode: "fts" } })).status).toBe(404);
}, patience(120_000));
afterAll(() => env.cleanup());

describe("the activity summary counts an agent's searches, recalls and remembers", () => {
  it("shows an agent's searches, recalls, remembers and failures at once, beside writes and reviews", async () => {
    const s = await summary({ agent: "bob" });
    expect(byKind(s)).toEqual({ search: [4, 1], recall: [1, 0], remember: [1, 0] });
    expect(s.failures).toBe(1);
    expect(s.writes).toBe(0);
    expect(s.reviews).toBe(0);
    // Per store: the unknown store's failure is under none of them.
    expect(byKind(await summary({ agent: "bob", store: "default" }))).toEqual({ search: [2, 0], recall: [1, 0], remember: [1, 0] });
    expect(byKind(await summary({ agent: "bob", store: "photos" }))).toEqual({ search: [1, 0], recall: [0, 0], remember: [0, 0] });
    // Another agent's summary is not bob's.
    expect(byKind(await summary({ agent: "critic" }))).toEqual({ search: [0, 0], recall: [0, 0], remember: [0, 0] });
  });

  it("counts MCP calls too, under the token's agent", async () => {
    await runTool({ name: "search", args: { store: "default", q: "backups", mode: "fts" }, options: { principal: (await principalOf(bob))! } });
    expect(byKind(await summary({ agent: "bob", store: "default" })).search).toEqual([3, 0]);
  });

  it("keeps the counts through a flush and a restart", async () => {
    const before = byKind(await summary({ agent: "bob" }));
    expect(await flushRetrievalCounts()).toBeGreaterThan(0);
    expect(await flushRetrievalCounts()).toBe(0);
    const rows = await governanceSql<{ n: number | string }>("select count(*) as n from retrieval_counts where agent_id = ?", ["bob"]);
    expect(Number(rows[0]!.n)).toBeGreaterThan(0);
    const back = asAnotherReplica();
    try {
      expect(byKind(await summary({ agent: "bob" }))).toEqual(before);
      // A later count in the same hour adds to the saved one.
      expect((await callRoute(recallRoute.POST, { token: bob, params: { store: "default" }, body: { query: "backups" } })).status).toBe(200);
      await flushRetrievalCounts();
      expect(byKind(await summary({ agent: "bob" })).recall).toEqual([before.recall![0]! + 1, 0]);
    } finally {
      back();
    }
  });

  it("saves the waiting counts when the server is stopped (SIGTERM)", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join("tests", "fixtures", "retrieval-counts-child.ts")], { cwd: process.cwd(), env: { ...process.env, DATA_DIR: env.dataDir }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("READY")) resolve();
      });
      child.stderr.on("data", (d: Buffer) => (out += d.toString()));
      child.on("exit", () => reject(new Error(`child exited before READY: ${out}`)));
    });
    child.kill("SIGTERM");
    expect(await exited).toBe("SIGTERM");
    expect(byKind(await summary({ agent: "nightly" })).search).toEqual([3, 1]);
  }, patience(60_000));

  it("keeps to the range asked, and retention drops hours older than DUALMIND_ACTIVITY_COUNTS_MAX_DAYS", async () => {
    const hour = 3_600_000;
    const now = Date.now();
    const old = now - 100 * 86_400_000;
    const oldHour = old - (old % hour);
    await saveRetrievalCounts({ handle: await ledgerHandle(), rows: [{ hourTs: oldHour, agentId: "bob", store: "default", kind: "search", count: 7, failures: 2 }] });
    expect(byKind(await summary({ agent: "bob", since: oldHour, until: oldHour + hour - 1 }))).toEqual({ search: [7, 2], recall: [0, 0], remember: [0, 0] });
    expect(byKind(await summary({ agent: "bob", since: now - 60_000 })).search![0]).toBe(5);
    await pruneRetrievalCounts({ handle: await ledgerHandle(), now });
    expect(byKind(await summary({ agent: "bob", since: oldHour, until: oldHour + hour - 1 })).search).toEqual([0, 0]);
    expect(byKind(await summary({ agent: "bob" })).search![0]).toBe(5);
  });
});

describe("a validation posted by a critic is the critic's activity", () => {
  it("lists the critic's validation of another agent's task, linked to the task, and counts it as a review", async () => {
    const task = await callRoute(tasksPOST, { token: builder, body: { task_id: "nightly-summary", intent: "summarize the nightly run", spec: {}, assignees: ["critic"] } });
    expect(task.status, JSON.stringify(task.json)).toBe(201);
    const v = await callRoute(validationsPOST, { token: critic, params: { id: "nightly-summary" }, body: { validation_id: "crit-1", critic_passed: true, runner_passed: null } });
    expect(v.status, JSON.stringify(v.json)).toBe(201);
    // A retry of the same validation is no second review.
    expect((await callRoute(validationsPOST, { token: critic, params: { id: "nightly-summary" }, body: { validation_id: "crit-1", critic_passed: true, runner_passed: null } })).status).toBe(200);

    const page = await callRoute(activityGET, { url: url("/activity", { agent: "critic" }), token: admin });
    const entries = page.json.entries as ActivityEntry[];
    expect(entries.map((e) => [e.action, e.link])).toEqual([["ledger.validation", "/ledger/tasks/builder~nightly-summary"]]);
    expect(entries[0]!.details).toMatchObject({ validation_id: "crit-1", critic_passed: true, runner_passed: null });
    const s = await summary({ agent: "critic" });
    expect([s.reviews, s.writes]).toEqual([1, 0]);
    // The builder's activity does not take the critic's review.
    expect((await summary({ agent: "builder" })).reviews).toBe(0);
  });
});
