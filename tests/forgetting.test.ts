import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as policyRoute from "@/app/api/v1/stores/[store]/policy/forget/route";
import * as runRoute from "@/app/api/v1/stores/[store]/policy/forget/run/route";
import * as runsRoute from "@/app/api/v1/stores/[store]/policy/forget/runs/route";
import * as historyRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/history/route";
import * as verifyRoute from "@/app/api/v1/stores/[store]/verify/route";
import * as restoreRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/restore/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as trashRoute from "@/app/api/v1/stores/[store]/memories/trash/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as feedbackRoute from "@/app/api/v1/stores/[store]/thoughts/[id]/feedback/route";
import { runForgettingIn } from "@/lib/api/forgetting";
import { FORGET_LIMITS } from "@/lib/index/forgetting";
import { runTool } from "@/lib/mcp/server";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { callRoute } from "./helpers";
import { governanceSql, principalOf, seedStore, seedTokens, storeSql, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;
let admin: string;
let write: string;
let read: string;
const P = { store: "kb" };
const DAY = 86_400_000;

/** Store kb and a keeper's (admin), a writer's and a reader's tokens. */
const seed = async () => {
  await seedStore("kb");
  return seedTokens({
    admin: { label: "a", agent_id: "keeper", scopes: ["read", "write", "admin"] },
    write: { label: "w", agent_id: "curator", scopes: ["write"] },
    read: { label: "r", agent_id: "reader", scopes: ["read"] },
  });
};
beforeEach(async () => {
  const started = await useTestBackend({}, { seed });
  env = started;
  ({ admin, write, read } = started.seeded);
});
afterEach(async () => {
  await env.cleanup();
  resetEmbedderForTests();
});

const url = (path: string) => `http://127.0.0.1/api/v1/stores/kb/${path}`;
const ok = (r: { status: number; json: unknown }, status = 200) => {
  expect(r.status, JSON.stringify(r.json)).toBe(status);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  return r.json as any;
};
const setPolicy = (policies: Record<string, unknown>, token = admin) => callRoute(policyRoute.PUT, { token, params: P, body: { policies } });
const memory = async (path: string, body: string, extra: Record<string, unknown> = {}) => ok(await callRoute(memoriesRoute.POST, { token: write, params: P, body: { path, body, ...extra } }), 201);
const thought = async (content: string, timestamp: number, tags?: string[]) => ok(await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content, timestamp, ...(tags ? { tags } : {}) } }), 201).thought.id as string;
const searched = async (q: string) => ok(await callRoute(searchRoute.POST, { token: read, params: P, body: { q, mode: "fts" } })).results.map((h: { path: string }) => h.path);
/** A run at an injected time: the rules read `now`, never the wall clock. */
const run = async (now: number, { dryRun = true, limit }: { dryRun?: boolean; limit?: number } = {}) => runForgettingIn({ store: "kb", dryRun, limit, now, who: { principal: await principalOf(admin) } });
const ids = (r: { items: { kind: string; id: string }[] }) => r.items.map((i) => `${i.kind}:${i.id}`);

describe("forgetting by policy", () => {
  it("a dry run lists exactly what the real run retires; the retired memory leaves search and restore returns it intact", async () => {
    await memory("notes/old-lisbon", "Alice lived in Lisbon near the river.");
    await memory("notes/kept", "Bob's lighthouse keeper notes from Lisbon.", { tags: ["pinned"] });
    ok(await setPolicy({ memory: { ttl_days: 30 } }));
    const later = Date.now() + 40 * DAY;

    const dry = await run(later);
    expect(dry.dry_run).toBe(true);
    expect(ids(dry)).toEqual(["memory:notes/old-lisbon"]);
    expect(dry.items[0]).toMatchObject({ rule: "ttl", title: "notes/old-lisbon" });
    expect(dry.items[0].why).toMatch(/^written 4\d days ago \(ttl 30 days\)$/);
    expect(await searched("lisbon")).toHaveLength(2);

    const rowsOf = async () => storeSql<{ n: number | string }>("kb", "select count(*) as n from chunks c join documents d on d.doc_id = c.doc_id where d.path = ?", ["memory/notes/old-lisbon.md"]);
    const chunksBefore = await rowsOf();
    const real = await run(later, { dryRun: false });
    // Archived, not dropped: the memory's rows stay while it is retired.
    expect(await rowsOf()).toEqual(chunksBefore);
    expect(Number(chunksBefore[0].n)).toBeGreaterThan(0);
    expect(ids(real)).toEqual(ids(dry));
    expect(real.ids_sha256).toBe(dry.ids_sha256);
    expect(real.counts).toEqual({ ttl: 1 });
    expect(await searched("lisbon")).toEqual(["memory/notes/kept.md"]);

    const restored = ok(await callRoute(restoreRoute.POST, { token: write, params: { ...P, kind: "memory", id: "notes/old-lisbon" }, body: { reason: "still true" } }));
    expect(restored.state).toMatchObject({ id: "notes/old-lisbon", status: "active" });
    expect(restored.transition.from).toBe("retired");
    expect((await searched("lisbon")).sort()).toEqual(["memory/notes/kept.md", "memory/notes/old-lisbon.md"]);
    const listed = ok(await callRoute(memoriesRoute.GET, { token: read, params: P, url: url("memories") })).memories.map((m: { path: string }) => m.path);
    expect(listed.sort()).toEqual(["notes/kept", "notes/old-lisbon"]);
    // A person kept it: the next run does not undo that decision.
    expect(ids(await run(later + DAY, { dryRun: false }))).toEqual([]);
  });

  it("a forgotten learning is recallable again after restore, same id and content", async () => {
    const learning = ok(await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "rotate_keys_quarterly", description: "rotate the signing keys every quarter" } }), 201).learning;
    ok(await setPolicy({ learning: { ttl_days: 7 } }));
    const recalled = async () => ok(await callRoute(recallRoute.POST, { token: read, params: P, body: { query: "rotate signing keys", signals: "lexical", min_score: 0 } })).learnings.map((l: { id: number; description: string }) => [l.id, l.description]);
    expect(await recalled()).toEqual([[learning.id, "rotate the signing keys every quarter"]]);
    expect(ids(await run(Date.now() + 8 * DAY, { dryRun: false }))).toEqual([`learning:${learning.id}`]);
    expect(await recalled()).toEqual([]);
    ok(await callRoute(restoreRoute.POST, { token: write, params: { ...P, kind: "learning", id: String(learning.id) }, body: { reason: "keep" } }));
    expect(await recalled()).toEqual([[learning.id, "rotate the signing keys every quarter"]]);
  });

  it("each rule retires what it should and nothing else: ttl since use, cap, never-used decay, expires_at; pinned and protected ids survive", async () => {
    const t0 = Date.now();
    // Thoughts: a cap of 2 keeps the two newest; one pinned old thought is kept past the cap.
    const oldest = await thought("first draft of the plan", t0 - 5000);
    const pinned = await thought("the plan's invariant", t0 - 4000, ["pinned"]);
    const middle = await thought("second draft of the plan", t0 - 3000);
    await thought("third draft of the plan", t0 - 2000);
    await thought("final plan", t0 - 1000);
    // Memories: one expired, one protected by id (also expired), one not expired.
    await memory("facts/expired", "The offer ends soon.", { expires_at: new Date(t0 + DAY).toISOString() });
    await memory("facts/protected", "The offer that stays.", { expires_at: new Date(t0 + DAY).toISOString() });
    await memory("facts/lasting", "The building is blue.");
    // Learnings: one seen again (used), one never: unused after 10 days retires only the second.
    const lesson = { predicate: "prefer_small_batches", description: "small batches keep the loop free" };
    const seenTwice = ok(await callRoute(learningsRoute.POST, { token: write, params: P, body: lesson }), 201).learning;
    ok(await callRoute(learningsRoute.POST, { token: write, params: P, body: lesson }));
    const neverSeen = ok(await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "log_in_utc", description: "write log times in UTC" } }), 201).learning;

    ok(
      await setPolicy({
        thought: { max_items: 2 },
        memory: { honour_expires_at: true, protected_ids: ["facts/protected"] },
        learning: { unused_days: 10 },
      }),
    );
    const at = t0 + 11 * DAY;
    const dry = await run(at);
    expect(dry.items.map((i: { kind: string; id: string; rule: string }) => [i.kind, i.id, i.rule])).toEqual([
      ["memory", "facts/expired", "expires_at"],
      ["learning", String(neverSeen.id), "unused"],
      ["thought", oldest, "cap"],
      ["thought", middle, "cap"],
    ]);
    expect(dry.counts).toEqual({ expires_at: 1, unused: 1, cap: 2 });
    expect(seenTwice.id).not.toBe(neverSeen.id);
    expect(ids(dry)).not.toContain(`thought:${pinned}`);

    // Feedback is use: a thought rated once is not "never used"; the others are, once old enough.
    ok(await setPolicy({ thought: { unused_days: 1 }, memory: null, learning: null }));
    ok(await callRoute(feedbackRoute.POST, { token: write, params: { ...P, id: middle }, body: { utility: 0.9 } }));
    const decay = await run(t0 + 2 * DAY);
    expect(decay.items.map((i: { id: string; rule: string }) => [i.id, i.rule])).toEqual([
      [oldest, "unused"],
      [decay.items[1].id, "unused"],
      [decay.items[2].id, "unused"],
    ]);
    expect(ids(decay)).not.toContain(`thought:${middle}`);
    expect(ids(decay)).not.toContain(`thought:${pinned}`);
    // And nothing happens a day earlier than the rule says.
    expect((await run(t0 + DAY / 2)).items).toEqual([]);

    // ttl since last use: a learning seen again today is used today.
    ok(await setPolicy({ thought: null, learning: { ttl_days: 5, ttl_since: "used" } }));
    expect(ids(await run(t0 + 6 * DAY)).sort()).toEqual([`learning:${neverSeen.id}`, `learning:${seenTwice.id}`].sort());
    expect(ids(await run(t0 + 4 * DAY))).toEqual([]);
  });

  it("a run retires at most its limit and says how many remain; a rerun retires nothing new; ledger and audit record each run with its actor", async () => {
    const t0 = Date.now();
    for (const n of [1, 2, 3]) await thought(`note number ${n}`, t0 - n * 1000);
    ok(await setPolicy({ thought: { ttl_days: 1 } }));
    const r1 = ok(await callRoute(runRoute.POST, { token: admin, params: P, body: { dry_run: false, limit: 2 } }));
    // The route runs at the wall clock: nothing is a day old yet.
    expect(r1).toMatchObject({ retired: 0, remaining: 0 });

    const first = await run(t0 + 2 * DAY, { dryRun: false, limit: 2 });
    expect(first).toMatchObject({ retired: 2, remaining: 1, remaining_exact: true, limit: 2 });
    const second = await run(t0 + 2 * DAY, { dryRun: false, limit: 2 });
    expect(second).toMatchObject({ retired: 1, remaining: 0 });
    expect(new Set([...ids(first), ...ids(second)]).size).toBe(3);
    const third = await run(t0 + 2 * DAY, { dryRun: false });
    expect(third).toMatchObject({ retired: 0, remaining: 0, items: [] });
    // The policy's, runs' and retired items' rows count in the store's bytes: the running total equals a recount.
    const usage = ok(await callRoute(verifyRoute.GET, { token: admin, params: P, url: url("verify") })).usage;
    expect(usage.bytes).toBe(usage.recounted_bytes);
    const [counted] = await storeSql<{ n: number | string }>("kb", "select count(*) as n from forget_retired");
    expect(Number(counted.n)).toBe(3);

    const runs = ok(await callRoute(runsRoute.GET, { token: read, params: P, url: url("policy/forget/runs") }));
    expect(runs.runs.map((r: { run_id: string; dry_run: boolean; retired: number; actor: string }) => [r.run_id, r.dry_run, r.retired, r.actor])).toEqual([
      [third.run_id, false, 0, "agent:keeper"],
      [second.run_id, false, 1, "agent:keeper"],
      [first.run_id, false, 2, "agent:keeper"],
      [r1.run_id, false, 0, "agent:keeper"],
    ]);
    expect(runs.forgotten.map((f: { kind: string; id: string }) => `${f.kind}:${f.id}`).sort()).toEqual([...ids(first), ...ids(second)].sort());

    const overrides = await governanceSql<{ actor: string; note: string }>("select actor, note from overrides where note like 'forget.run%' order by ts");
    expect(overrides).toHaveLength(4);
    expect(overrides.every((o) => o.actor === "agent:keeper")).toBe(true);
    expect(overrides.find((o) => o.note.includes(first.run_id))?.note).toBe(`forget.run real store kb run ${first.run_id}: ttl=2; 1 remaining`);
    const audit = await governanceSql<{ actor: string; details: string }>("select actor, details from audit_log where action = 'forget.run' order by id");
    expect(audit).toHaveLength(4);
    expect(audit.every((a) => a.actor === "agent:keeper")).toBe(true);
    expect(JSON.parse(audit[1].details)).toMatchObject({ run_id: first.run_id, retired: 2, counts: { ttl: 2 }, ids_sha256: first.ids_sha256 });
    // Each retired item's own history names the policy, the rule and the run.
    const [retiredId] = ids(first).map((i) => i.split(":")[1]);
    const h = ok(await callRoute(historyRoute.GET, { token: read, params: { ...P, kind: "thought", id: retiredId } }));
    expect(h.state).toMatchObject({ status: "retired", decided_by: "policy:forget-thought" });
    expect(h.history[0].reason).toMatch(new RegExp(`^forgotten: ttl: written 2 days ago \\(ttl 1 days\\); run ${first.run_id} by agent:keeper$`));
  });

  it("a memory written at the path of one a run retired and that was then deleted is forgotten by policy like any other", async () => {
    await memory("notes/reused", "Carol parked her boat at the old marina.");
    ok(await setPolicy({ memory: { ttl_days: 30 } }));
    const later = Date.now() + 40 * DAY;
    expect(ids(await run(later, { dryRun: false }))).toEqual(["memory:notes/reused"]);
    const at = `http://127.0.0.1/api/v1/stores/kb/memories?${new URLSearchParams({ path: "notes/reused" })}`;
    expect((await callRoute(memoriesRoute.DELETE, { method: "DELETE", token: write, params: P, url: at })).status).toBeLessThan(300);
    // Another memory at the freed path: the run's record of retiring the first one went with it to the trash.
    await memory("notes/reused", "Dan keeps his kayak at the new marina.");
    const dry = await run(Date.now() + 80 * DAY);
    expect(ids(dry)).toEqual(["memory:notes/reused"]);
    expect(dry.items[0].why).toMatch(/ttl 30 days/);
    // The first one, back from the trash at another path and restored by a person, is remembered as forgotten once:
    // the record waited with its trash entry, so a run does not take it again.
    const [entry] = ok(await callRoute(trashRoute.GET, { token: read, params: P, url: url("memories/trash") })).trash;
    ok(await callRoute(trashRoute.POST, { token: write, params: P, body: { id: entry.id, to: "notes/kept-boat" } }));
    ok(await callRoute(restoreRoute.POST, { token: write, params: { ...P, kind: "memory", id: "notes/kept-boat" }, body: { reason: "still true" } }));
    expect(ids(await run(Date.now() + 80 * DAY))).toEqual(["memory:notes/reused"]);
  });
  it("a store without a policy is untouched by a run, however old its items", async () => {
    await memory("notes/ancient", "An old note.");
    await thought("an old thought", Date.now() - 1000);
    const r = await run(Date.now() + 3650 * DAY, { dryRun: false });
    expect(r).toMatchObject({ retired: 0, remaining: 0, items: [], counts: {} });
    expect(await searched("old note")).toEqual(["memory/notes/ancient.md"]);
  });

  it("the CLI sets a policy, runs dry by default and retires with --apply, as cli:<user>", async () => {
    const { forgetCommands } = await import("@/scripts/commands/forget-commands");
    const lines: string[] = [];
    const cli = (name: string, args: string[], flags: Record<string, string | boolean> = {}) => forgetCommands.find((c) => c.name === name)!.run({ args, flags, json: false, out: (h) => void lines.push(h) });
    const id = await thought("a passing remark", Date.now() - 1000);
    await cli("forget set", ["kb", "thought"], { "ttl-days": "0" });
    expect(lines.pop()).toMatch(/^thought\tttl 0 days since written\tcap -\tunused -\tprotected 0\t\(cli:/);
    await cli("forget run", ["kb"]);
    expect(lines.pop()).toMatch(new RegExp(`^dry run \\(nothing retired; --apply to retire\\): 1 item\\(s\\); 0 remaining past the limit of 100 .*\\nthought\\t${id}\\tttl\\t`));
    await cli("forget run", ["kb"], { apply: true, limit: "5" });
    expect(lines.pop()).toMatch(/^retired: 1 item\(s\); 0 remaining past the limit of 5 /);
    await cli("forget run", ["kb"], { apply: true });
    expect(lines.pop()).toMatch(/^retired: 0 item\(s\)/);
    await cli("forget runs", ["kb"]);
    expect(lines.pop()).toContain(`forgotten, still retired:\nthought\t${id}\tttl`);
    await expect(cli("forget run", ["kb"], { limit: String(FORGET_LIMITS.maxPerRun + 1) })).rejects.toThrow(/maxPerRun/);
  });

  it("limits name themselves (4xx); setting a policy and running are admin acts", async () => {
    const bad = await callRoute(runRoute.POST, { token: admin, params: P, body: { limit: FORGET_LIMITS.maxPerRun + 1 } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.json)).toContain("maxPerRun");
    const days = await setPolicy({ memory: { ttl_days: FORGET_LIMITS.maxDays + 1 } });
    expect(days.status).toBe(400);
    expect(JSON.stringify(days.json)).toContain("maxDays");
    const ids = await setPolicy({ learning: { protected_ids: Array.from({ length: FORGET_LIMITS.maxProtectedIds + 1 }, (_, i) => String(i + 1)) } });
    expect(ids.status).toBe(400);
    expect(JSON.stringify(ids.json)).toContain("maxProtectedIds");
    const wrongKind = await setPolicy({ thought: { honour_expires_at: true } });
    expect(wrongKind.status).toBe(400);
    expect(JSON.stringify(wrongKind.json)).toContain("only memories carry expires_at");

    for (const token of [read, write]) {
      expect((await setPolicy({ memory: { ttl_days: 1 } }, token)).status).toBe(403);
      expect((await callRoute(runRoute.POST, { token, params: P, body: {} })).status).toBe(403);
    }
    expect(ok(await callRoute(policyRoute.GET, { token: read, params: P, url: url("policy/forget") })).policies).toEqual([]);

    // MCP answers the same, with the same scopes.
    const set = (await runTool({ name: "forget_policy_set", args: { store: "kb", policies: { memory: { ttl_days: 3 } } }, options: { principal: await principalOf(admin) } })) as { policies: { kind: string; ttl_days: number }[] };
    expect(set.policies.map((p) => [p.kind, p.ttl_days])).toEqual([["memory", 3]]);
    await expect(runTool({ name: "forget_run", args: { store: "kb" }, options: { principal: await principalOf(write) } })).rejects.toThrow(/'admin' scope/);
  });
});
