import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as activityGET } from "@/app/api/v1/activity/route";
import { GET as summaryGET } from "@/app/api/v1/activity/summary/route";
import { POST as memoriesPOST, DELETE as memoriesDELETE } from "@/app/api/v1/stores/[store]/memories/route";
import { activityFilterSchema, listActivity, type ActivityEntry } from "@/lib/governance/activity";
import { runTool } from "@/lib/mcp/server";
import { callRoute } from "./helpers";
import { principalOf, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { patience } from "./fixtures/patience";

let env: TestEnv;
let admin: string;
let bob: string;
let alice: string;
let reader: string;
let limitedAdmin: string;

const url = (path: string, q: Record<string, string | number>) => `http://127.0.0.1/api/v1${path}?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`;
const activity = (q: Record<string, string | number>, token = admin) => callRoute(activityGET, { url: url("/activity", q), token });

async function writeMemory(token: string, store: string, path: string) {
  const res = await callRoute(memoriesPOST, { token, params: { store }, body: { path, body: `note ${path}` } });
  expect(res.status, JSON.stringify(res.json)).toBe(201);
}

beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("photos");
  admin = await seedToken({ label: "ops", agent_id: "ops", scopes: ["admin"] });
  bob = await seedToken({ label: "bob", agent_id: "bob", scopes: ["write"] });
  alice = await seedToken({ label: "alice", agent_id: "alice", scopes: ["write"] });
  reader = await seedToken({ label: "reader", agent_id: "reader", scopes: ["read"] });
  limitedAdmin = await seedToken({ label: "limited", agent_id: "limited", scopes: ["admin"], stores: ["photos"] });
  for (const p of ["trips/rome", "trips/oslo", "people/ann"]) await writeMemory(bob, "default", p);
  await writeMemory(alice, "photos", "cameras/leica");
  const del = await callRoute(memoriesDELETE, { token: bob, params: { store: "default" }, url: url("/stores/default/memories", { path: "trips/oslo" }) });
  expect(del.status, JSON.stringify(del.json)).toBe(200);
}, patience(120_000));
afterAll(() => env.cleanup());

describe("the activity explorer answers 'what did agent X do?'", () => {
  it("lists one agent's actions newest first, each linked to what it touched", async () => {
    const res = await activity({ agent: "bob" });
    expect(res.status).toBe(200);
    const entries = res.json.entries as ActivityEntry[];
    expect(entries.map((e) => [e.action, e.target])).toEqual([
      ["memory.delete", "store:default/memory:trips/oslo"],
      ["memory.create", "store:default/memory:people/ann"],
      ["memory.create", "store:default/memory:trips/oslo"],
      ["memory.create", "store:default/memory:trips/rome"],
    ]);
    expect(entries.every((e) => e.actor === "agent:bob")).toBe(true);
    expect(entries[1]!.link).toBe("/memories?store=default&path=people%2Fann");
    expect(res.json.next_cursor).toBeNull();
    expect(res.json.complete).toBe(true);
  });

  it("filters by action family and store together", async () => {
    const res = await activity({ action: "memory.", store: "photos" });
    expect((res.json.entries as ActivityEntry[]).map((e) => `${e.actor} ${e.action} ${e.target}`)).toEqual(["agent:alice memory.create store:photos/memory:cameras/leica"]);
    const exact = await activity({ action: "memory.delete" });
    expect((exact.json.entries as ActivityEntry[]).map((e) => e.actor)).toEqual(["agent:bob"]);
  });

  it("pages by cursor without losing or repeating an entry", async () => {
    const first = await activity({ agent: "bob", limit: 3 });
    expect(first.json.entries).toHaveLength(3);
    expect(first.json.next_cursor).toBe(first.json.entries[2].id);
    const second = await activity({ agent: "bob", limit: 3, before: first.json.next_cursor });
    expect((second.json.entries as ActivityEntry[]).map((e) => e.target)).toEqual(["store:default/memory:trips/rome"]);
    expect(second.json.next_cursor).toBeNull();
  });

  it("keeps to a time range", async () => {
    const all = (await activity({ agent: "bob" })).json.entries as ActivityEntry[];
    const newest = all[0]!.ts;
    const future = await activity({ agent: "bob", since: newest + 60_000 });
    expect(future.json.entries).toEqual([]);
    const past = await activity({ agent: "bob", until: new Date(all[all.length - 1]!.ts - 60_000).toISOString() });
    expect(past.json.entries).toEqual([]);
    expect((await activity({ agent: "bob", since: all[all.length - 1]!.ts, until: newest })).json.entries).toHaveLength(4);
  });

  it("summarizes an agent's actions per action", async () => {
    const res = await callRoute(summaryGET, { url: url("/activity/summary", { agent: "bob" }), token: admin });
    expect(res.status).toBe(200);
    expect(res.json.total).toBe(4);
    expect(res.json.by_action).toEqual([
      { action: "memory.create", count: 3 },
      { action: "memory.delete", count: 1 },
    ]);
    const unnamed = await callRoute(summaryGET, { url: url("/activity/summary", { store: "default" }), token: admin });
    expect(unnamed.status).toBe(400);
  });

  it("reads a bounded window per request and says when older entries may still match", async () => {
    // Twenty entries by someone else on top of bob's: a window of ten ends before any of bob's.
    for (let i = 0; i < 20; i++) await writeMemory(alice, "photos", `bulk/n${i}`);
    const filter = activityFilterSchema.parse({ agent: "bob", limit: 10 });
    const first = await listActivity({ filter, scanWindow: 10 });
    expect(first.entries).toEqual([]);
    expect(first.complete).toBe(false);
    expect(first.next_cursor).not.toBeNull();
    // Following the cursor reaches them.
    let cursor = first.next_cursor;
    const found: ActivityEntry[] = [];
    for (let hops = 0; cursor !== null && hops < 10; hops++) {
      const page = await listActivity({ filter: { ...filter, before: cursor }, scanWindow: 10 });
      found.push(...page.entries);
      cursor = page.next_cursor;
    }
    expect(found.filter((e) => e.action === "memory.create")).toHaveLength(3);
  });

  it("leaves account administration out for a dashboard viewer, and shows it to admins", async () => {
    const filter = activityFilterSchema.parse({ action: "token." });
    expect((await listActivity({ filter })).entries.length).toBeGreaterThanOrEqual(5);
    expect((await listActivity({ filter, accounts: false })).entries).toEqual([]);
  });

  it("is refused to a read or write token; an admin limited to some stores sees only what touched them", async () => {
    expect((await activity({ agent: "bob" }, reader)).status).toBe(403);
    expect((await activity({ agent: "bob" }, bob)).status).toBe(403);
    expect((await activity({ agent: "bob" }, limitedAdmin)).status).toBe(403);
    expect((await activity({ agent: "bob", store: "default" }, limitedAdmin)).status).toBe(403);
    const own = await activity({ action: "memory.", store: "photos", limit: 200 }, limitedAdmin);
    expect(own.status).toBe(200);
    expect((own.json.entries as ActivityEntry[]).every((e) => e.target?.startsWith("store:photos/"))).toBe(true);
    expect(own.json.entries.length).toBeGreaterThan(0);
  });

  it("refuses malformed filters with the field's name", async () => {
    const res = await activity({ limit: 100_000 });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.json.error)).toContain("limit");
    expect((await activity({ since: "last tuesday" })).status).toBe(400);
  });

  it("answers the same over MCP, for admins only", async () => {
    const options = { principal: (await principalOf(admin))! };
    const page = (await runTool({ name: "activity", args: { agent: "bob", limit: 2 }, options })) as { entries: ActivityEntry[] };
    expect(page.entries.map((e) => e.action)).toEqual(["memory.delete", "memory.create"]);
    await expect(runTool({ name: "activity", args: { agent: "bob" }, options: { principal: (await principalOf(reader))! } })).rejects.toMatchObject({ code: "forbidden" });
    await expect(runTool({ name: "activity_summary", args: { agent: "bob" }, options: { principal: (await principalOf(limitedAdmin))! } })).rejects.toMatchObject({ code: "forbidden" });
    const limited = (await runTool({ name: "activity_summary", args: { agent: "alice", store: "photos" }, options: { principal: (await principalOf(limitedAdmin))! } })) as { total: number };
    expect(limited.total).toBeGreaterThan(0);
  });
});
