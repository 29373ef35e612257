import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as historyRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/history/route";
import * as invalidateRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/invalidate/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as thoughtRoute from "@/app/api/v1/stores/[store]/thoughts/[id]/route";
import * as nodesRoute from "@/app/api/v1/stores/[store]/nodes/route";
import * as nodeRoute from "@/app/api/v1/stores/[store]/nodes/[id]/route";
import * as relationsRoute from "@/app/api/v1/stores/[store]/relations/route";
import * as relationRoute from "@/app/api/v1/stores/[store]/relations/[id]/route";
import * as framesRoute from "@/app/api/v1/stores/[store]/frames/route";
import * as frameRoute from "@/app/api/v1/stores/[store]/frames/[id]/route";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import * as contradictionsRoute from "@/app/api/v1/stores/[store]/contradictions/route";
import * as proposalsRoute from "@/app/api/v1/stores/[store]/proposals/route";
import * as policyRoute from "@/app/api/v1/stores/[store]/policy/write/route";
import { graphBackend } from "@/lib/graph/backend";
import { GET as activityRoute } from "@/app/api/v1/activity/route";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { callRoute } from "./helpers";
import { seedStore, seedToken, seedTokens, storeSql, useTestBackend, type TestEnv } from "./backend";

/**
 * Facts superseded instead of contradicted (lib/index/facts.ts): a write that states a new value for the same subject
 * and property retires the old one (both kept, linked); an older one arriving late goes to history; the same time
 * with another value is a contradiction, flagged and listed. And the point-in-time rules of retrieval around them.
 */
let env: TestEnv;
let write: string;
let read: string;
let admin: string;
const P = { store: "kb" };
const DAY = 86_400_000;
const T1 = Date.UTC(2023, 4, 8);
const T2 = T1 + 60 * DAY;
const T3 = T1 + 120 * DAY;

/** Store kb and a writer's, a reader's and an admin's tokens. */
const seed = async () => {
  await seedStore("kb");
  return seedTokens({
    write: { label: "w", agent_id: "curator", scopes: ["write"] },
    read: { label: "r", agent_id: "reader", scopes: ["read"] },
    admin: { label: "a", agent_id: "auditor", scopes: ["admin"] },
  });
};
beforeEach(async () => {
  const started = await useTestBackend({}, { seed });
  env = started;
  ({ write, read, admin } = started.seeded);
});
afterEach(async () => {
  await env.cleanup();
  resetEmbedderForTests();
});

const created = (r: { status: number; json: unknown }) => {
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  return r.json as Record<string, { id: string | number; path?: string }>;
};
const memory = (path: string, body: string, extra: Record<string, unknown> = {}) => callRoute(memoriesRoute.POST, { token: write, params: P, body: { path, body, ...extra } });
const searched = async (q: string, extra: Record<string, unknown> = {}) => (await callRoute(searchRoute.POST, { token: read, params: P, body: { q, mode: "fts", ...extra } })).json.results.map((h: { path: string }) => h.path);
const remember = (query: string, extra: Record<string, unknown> = {}) => callRoute(rememberRoute.POST, { token: read, params: P, body: { query, ...extra } });
const remembered = async (query: string, extra: Record<string, unknown> = {}) => (await remember(query, extra)).json.results.map((r: { id: string }) => r.id);
const history = (kind: string, id: string) => callRoute(historyRoute.GET, { token: read, params: { ...P, kind, id } });
const contradictions = async () => {
  const r = await callRoute(contradictionsRoute.GET, { token: read, params: P, url: "http://127.0.0.1/api/v1/stores/kb/contradictions" });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json.contradictions as { kind: string; id: string; other_id: string; rule: string }[];
};
const node = async (name: string) => created(await callRoute(nodesRoute.POST, { token: write, params: P, body: { name, entity_type: "concept" } })).node.id as string;

describe("facts: a new value for the same subject and property supersedes the old", () => {
  it("a memory with subject and property retires the one before it: both kept and linked, search answers the new, as_of between answers the old", async () => {
    created(await memory("people/caroline-home-1", "Caroline lives in a flat in Boston.", { subject: "Caroline", property: "lives in", valid_from: T1 }));
    created(await memory("people/caroline-home-2", "Caroline lives in a house near Sweden's coast.", { subject: "caroline", property: "Lives  In", valid_from: T2 }));
    expect(await searched("caroline lives")).toEqual(["memory/people/caroline-home-2.md"]);
    expect(await searched("caroline lives", { as_of: T1 + DAY })).toEqual(["memory/people/caroline-home-1.md"]);
    expect(await searched("caroline lives", { as_of: T2 + DAY })).toEqual(["memory/people/caroline-home-2.md"]);
    const old = (await history("memory", "people/caroline-home-1")).json;
    expect(old.state).toMatchObject({ status: "retired", superseded_by: "people/caroline-home-2", valid_from: T1, valid_to: T2 });
    expect(old.history.map((t: { to: string; superseded_by?: string }) => [t.to, t.superseded_by])).toEqual([["retired", "people/caroline-home-2"]]);
    const fresh = (await history("memory", "people/caroline-home-2")).json;
    expect(fresh.state).toMatchObject({ status: "active", supersedes: "people/caroline-home-1", valid_from: T2, valid_to: null });
    expect(fresh.history.map((t: { supersedes?: string }) => t.supersedes)).toEqual(["people/caroline-home-1"]);
    // The same value again is no change; another property of the same subject is another fact.
    created(await memory("people/caroline-job", "Caroline works as a counselor.", { subject: "Caroline", property: "job", valid_from: T3 }));
    expect((await history("memory", "people/caroline-home-2")).json.state.status).toBe("active");
  });

  it("an exclusive relation's new target retires the old relation: remember no longer reaches the old target through it", async () => {
    const melanie = await node("Melanie potter");
    const oldJob = await node("bakery shift");
    const newJob = await node("pottery studio");
    const first = (await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: melanie, to_id: oldJob, relationship_type: "works at", weight: 0.9, exclusive: true, valid_from: T1 } })).json.relation;
    const second = (await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: melanie, to_id: newJob, relationship_type: "works_at", weight: 0.9, exclusive: true, valid_from: T2 } })).json.relation;
    expect((await history("relation", first.id)).json.state).toMatchObject({ status: "retired", superseded_by: second.id, valid_to: T2 });
    const now = await remembered("melanie");
    expect(now).toContain(newJob);
    expect(now).not.toContain(oldJob);
    // Nodes written now did not exist at T1: as_of that far back answers none of them (event time is the relation's only).
    expect(await remembered("melanie", { as_of: T1 + DAY })).toEqual([]);
    expect(await remembered("melanie", { include_retired: true })).toEqual(expect.arrayContaining([oldJob, newJob]));
    // A relation not declared exclusive never supersedes: two friends are two facts.
    const friend = await node("friend one");
    created(await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: melanie, to_id: friend, relationship_type: "works_at", weight: 0.9 } }));
    expect((await history("relation", second.id)).json.state.status).toBe("active");
  });

  it("an older value written late goes to history: the current fact stays, as_of in each one's time answers it", async () => {
    const a = created(await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "pet", description: "Caroline has a cat named Oscar", subject: "Caroline", property: "pet", valid_from: T3 } })).learning;
    const b = created(await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "pet", description: "Caroline has a dog named Bailey", subject: "Caroline", property: "pet", valid_from: T1 } })).learning;
    expect((await history("learning", String(a.id))).json.state).toMatchObject({ status: "active", valid_from: T3 });
    expect((await history("learning", String(b.id))).json.state).toMatchObject({ status: "retired", superseded_by: String(a.id), valid_from: T1, valid_to: T3 });
    // A third, between the two, ends the history it falls into.
    const c = created(await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "pet", description: "Caroline has a parrot", subject: "Caroline", property: "pet", valid_from: T2 } })).learning;
    expect((await history("learning", String(c.id))).json.state).toMatchObject({ status: "retired", valid_from: T2, valid_to: T3 });
    expect((await history("learning", String(b.id))).json.state).toMatchObject({ valid_to: T2 });
    const listed = (await callRoute(learningsRoute.GET, { token: read, params: P, url: "http://127.0.0.1/api/v1/stores/kb/learnings" })).json.learnings.map((l: { id: number }) => l.id);
    expect(listed).toEqual([a.id]);
    const recalled = async (as_of: number) => (await callRoute(recallRoute.POST, { token: read, params: P, body: { query: "Caroline pet", signals: "lexical", min_score: 0, as_of } })).json.learnings.map((l: { id: number }) => l.id);
    expect(await recalled(T1 + DAY)).toEqual([b.id]);
    expect(await recalled(T2 + DAY)).toEqual([c.id]);
    expect(await recalled(Date.now())).toEqual([a.id]);
  });

  it("the same subject and property with another value at the same time is a contradiction: both stay, both are listed, remember's inconsistency counts it", async () => {
    const one = created(await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "Melanie moved to Denver with her family", timestamp: T2, subject: "Melanie", property: "home" } })).thought;
    const two = created(await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "Melanie moved to Austin with her family", timestamp: T2, subject: "Melanie", property: "home" } })).thought;
    expect(await contradictions()).toEqual([{ kind: "thought", id: [one.id, two.id].sort()[0], other_id: [one.id, two.id].sort()[1], rule: "same_subject_property", reason: expect.stringContaining("same subject and property"), created_at: expect.any(Number) }]);
    const answer = await remember("melanie moved family");
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    const byId = new Map(answer.json.results.map((r: { id: string; breakdown: { inconsistency: number } }) => [r.id, r.breakdown.inconsistency]));
    expect(byId.get(one.id)).toBe(0.5);
    expect(byId.get(two.id)).toBe(0.5);
    // Flagged on both, beside the poisoning flags, naming the other.
    const flagsOf = (id: string) => answer.json.results.find((r: { id: string }) => r.id === id).flags;
    expect(flagsOf(String(one.id))).toEqual([expect.objectContaining({ flag: "contradiction", rule: "same_subject_property", other_id: two.id })]);
    expect(flagsOf(String(two.id))).toEqual([expect.objectContaining({ flag: "contradiction", other_id: one.id })]);
    const read1 = await callRoute(thoughtRoute.GET, { token: read, params: { ...P, id: String(one.id) } });
    expect(read1.json.thought?.flags ?? read1.json.flags).toEqual([expect.objectContaining({ flag: "contradiction", other_id: two.id })]);
    // Memories too: the same subject, property and time with another value.
    created(await memory("people/melanie-a", "Melanie lives in Denver.", { subject: "Melanie", property: "city", valid_from: T2 }));
    created(await memory("people/melanie-b", "Melanie lives in Austin.", { subject: "Melanie", property: "city", valid_from: T2 }));
    const m = await callRoute(memoriesRoute.GET, { token: read, params: P, url: "http://127.0.0.1/api/v1/stores/kb/memories?path=people/melanie-a" });
    expect(m.status, JSON.stringify(m.json)).toBe(200);
    expect((m.json.memory ?? m.json).flags).toEqual([expect.objectContaining({ flag: "contradiction", other_id: "people/melanie-b" })]);
    expect((await contradictions()).map((c) => c.kind).sort()).toEqual(["memory", "thought"]);
    await callRoute(invalidateRoute.POST, { token: write, params: { ...P, kind: "memory", id: "people/melanie-b" }, body: { reason: "Denver" } });
    // Retiring either resolves it.
    expect((await callRoute(invalidateRoute.POST, { token: write, params: { ...P, kind: "thought", id: String(two.id) }, body: { reason: "it was Denver" } })).status).toBe(200);
    expect(await contradictions()).toEqual([]);
    const after = await remember("melanie moved family");
    expect(after.json.results.find((r: { id: string }) => r.id === one.id).breakdown.inconsistency).toBe(0);
  });

  it("an event time in the future does not pin a fact: the next value still supersedes it", async () => {
    // A thought's timestamp is the writer's to give; as a fact's start it is taken no later than the write.
    const far = created(await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "Jon's bakery is on Elm Street", timestamp: 9e15, subject: "Jon", property: "bakery" } })).thought;
    const next = created(await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "Jon's bakery moved to Oak Avenue", subject: "Jon", property: "bakery" } })).thought;
    expect((await history("thought", String(far.id))).json.state).toMatchObject({ status: "retired", superseded_by: String(next.id) });
    expect((await history("thought", String(next.id))).json.state).toMatchObject({ status: "active" });
  });

  it("limits name themselves: a subject, property or value past its length, a valid_from before 2000", async () => {
    const long = await memory("x/long", "b", { subject: "s".repeat(201), property: "p" });
    expect([long.status, JSON.stringify(long.json)]).toEqual([400, expect.stringContaining("maxSubjectChars")]);
    const prop = await callRoute(learningsRoute.POST, { token: write, params: P, body: { predicate: "p", subject: "s", property: "p".repeat(101) } });
    expect([prop.status, JSON.stringify(prop.json)]).toEqual([400, expect.stringContaining("maxPropertyChars")]);
    const value = await memory("x/value", "b", { subject: "s", property: "p", value: "v".repeat(1001) });
    expect([value.status, JSON.stringify(value.json)]).toEqual([400, expect.stringContaining("maxValueChars")]);
    const early = await memory("x/early", "b", { subject: "s", property: "p", valid_from: 5 });
    expect([early.status, JSON.stringify(early.json)]).toEqual([400, expect.stringContaining("minAsOf")]);
    const listing = await callRoute(contradictionsRoute.GET, { token: read, params: P, url: "http://127.0.0.1/api/v1/stores/kb/contradictions?limit=201" });
    expect([listing.status, JSON.stringify(listing.json)]).toEqual([400, expect.stringContaining("maxListed")]);
  });
});

describe("point in time and remember's filter", () => {
  it("as_of hides an item written after it that never had a decision", async () => {
    created(await memory("notes/early", "The harbour opens at dawn."));
    const t = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    created(await memory("notes/late", "The harbour closes at dusk."));
    const thought = created(await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content: "The harbour master keeps a log" } })).thought;
    expect(await searched("harbour")).toHaveLength(2);
    expect(await searched("harbour", { as_of: t })).toEqual(["memory/notes/early.md"]);
    expect(await remembered("harbour master")).toContain(thought.id);
    expect(await remembered("harbour master", { as_of: t })).not.toContain(thought.id);
  });

  it("remember does not seed from a retired node nor expand through a retired relation", async () => {
    const hub = await node("zeppelin hangar");
    const viaNode = await node("quiet meadow");
    const viaRelation = await node("rusty anchor");
    const seed = await node("zeppelin crew");
    created(await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: hub, to_id: viaNode, relationship_type: "near", weight: 0.9 } }));
    const rel = (await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id: seed, to_id: viaRelation, relationship_type: "owns", weight: 0.9 } })).json.relation;
    const before = await remembered("zeppelin");
    expect(before).toEqual(expect.arrayContaining([viaNode, viaRelation]));
    await callRoute(invalidateRoute.POST, { token: write, params: { ...P, kind: "node", id: hub }, body: { reason: "no such hangar" } });
    await callRoute(invalidateRoute.POST, { token: write, params: { ...P, kind: "relation", id: rel.id }, body: { reason: "sold" } });
    const after = await remembered("zeppelin");
    expect(after).toContain(seed);
    expect(after).not.toContain(hub);
    expect(after).not.toContain(viaNode);
    expect(after).not.toContain(viaRelation);
  });

  it("an item decision's audit entry is found by the activity explorer's store filter", async () => {
    created(await memory("notes/wrong", "The moon is made of cheese."));
    expect((await callRoute(invalidateRoute.POST, { token: write, params: { ...P, kind: "memory", id: "notes/wrong" }, body: { reason: "not a fact" } })).status).toBe(200);
    const r = await callRoute(activityRoute, { token: admin, url: "http://127.0.0.1/api/v1/activity?store=kb&action=item." });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.entries.map((e: { action: string; target: string }) => [e.action, e.target])).toEqual([["item.invalidate", "store:kb/memory:notes/wrong"]]);
  });
});

describe("superseding is one transaction with the create", () => {
  it("a create refused after the retirement would have happened leaves the old fact active", async () => {
    await env.cleanup();
    env = await useTestBackend({ DUALMIND_MAX_STORE_BYTES: String(160 * 1024) });
    resetEmbedderForTests();
    await seedStore("kb");
    write = await seedToken({ label: "w", agent_id: "curator", scopes: ["write"] });
    read = await seedToken({ label: "r", agent_id: "reader", scopes: ["read"] });
    const n = await node("lighthouse");
    const old = created(await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: n, column: "semantic", properties: { keeper: "Ada" }, exclusive: true, valid_from: T1 } })).frame;
    // Fill the store near its quota, then write a superseding frame too big for what is left.
    for (let i = 0; i < 2; i++) created(await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: n, column: "episodic", properties: { [`log${i}`]: "x".repeat(50_000) } } }));
    const big = await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: n, column: "semantic", properties: { keeper: "y".repeat(60_000) }, exclusive: true, valid_from: T2 } });
    expect([big.status, JSON.stringify(big.json)]).toEqual([422, expect.stringContaining("DUALMIND_MAX_STORE_BYTES")]);
    expect((await history("frame", String(old.id))).json.state).toMatchObject({ status: "active", superseded_by: null, valid_to: null });
    expect(Number((await storeSql<{ n: unknown }>("kb", "select count(*) as n from item_state where status = 'retired'"))[0].n)).toBe(0);
    // The same supersede that fits retires the old one.
    const fits = created(await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id: n, column: "semantic", properties: { keeper: "Grace" }, exclusive: true, valid_from: T2 } })).frame;
    expect((await history("frame", String(old.id))).json.state).toMatchObject({ status: "retired", superseded_by: fits.id, valid_to: T2 });
  });
});

describe("a deleted item's facts go with it (lib/index/item-state.ts itemsDeletedOp)", () => {
  const ok = (r: { status: number; json: unknown }) => {
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    return r.json as Record<string, unknown>;
  };
  const del = async (route: { DELETE: typeof thoughtRoute.DELETE }, id: string) => ok(await callRoute(route.DELETE, { method: "DELETE", token: write, params: { ...P, id } }));
  const flagsOf = (item: unknown) => (item as { flags: { flag: string }[] }).flags.map((f) => f.flag);
  const thought = async (content: string, extra: Record<string, unknown> = {}) => String(created(await callRoute(thoughtsRoute.POST, { token: write, params: P, body: { content, timestamp: T2, subject: "Melanie", property: "home", ...extra } })).thought.id);
  const relation = async (from_id: string, to_id: string) => String(created(await callRoute(relationsRoute.POST, { token: write, params: P, body: { from_id, to_id, relationship_type: "works at", exclusive: true, valid_from: T2 } })).relation.id);
  const frame = async (node_id: string, keeper: string) => String(created(await callRoute(framesRoute.POST, { token: write, params: P, body: { node_id, column: "semantic", properties: { keeper }, exclusive: true, valid_from: T2 } })).frame.id);

  it("a thought: the list is empty, the survivor's read has no contradiction flag, remember no longer penalises it", async () => {
    const denver = await thought("Melanie moved to Denver with her family");
    const austin = await thought("Melanie moved to Austin with her family");
    expect(await contradictions()).toHaveLength(1);
    expect((await del(thoughtRoute, austin)).deleted).toBe(austin);
    expect(await contradictions()).toEqual([]);
    expect(flagsOf(ok(await callRoute(thoughtRoute.GET, { token: read, params: { ...P, id: denver } })).thought)).not.toContain("contradiction");
    const survivor = (await remember("melanie moved family")).json.results.find((r: { id: string }) => r.id === denver);
    expect(survivor.breakdown.inconsistency).toBe(0);
    expect(flagsOf(survivor)).not.toContain("contradiction");
  });

  it("a later fact of the same subject and property is not held against a deleted one: it contradicts nothing, supersedes the live one only", async () => {
    const first = await thought("Melanie lives in Denver");
    await del(thoughtRoute, first);
    const same = await thought("Melanie lives in Austin");
    expect(await contradictions()).toEqual([]);
    const newer = await thought("Melanie lives in Boston", { timestamp: T3 });
    expect((await history("thought", same)).json.state).toMatchObject({ status: "retired", superseded_by: newer });
    expect((await history("thought", first)).status).toBe(404);
  });

  it("a relation, a frame, and a node's relations and frames that cascade with it", async () => {
    const [melanie, acme, globex, initech] = [await node("Melanie"), await node("Acme"), await node("Globex"), await node("Initech")];
    const atAcme = await relation(melanie, acme);
    const atGlobex = await relation(melanie, globex);
    await relation(melanie, initech);
    const ada = await frame(acme, "Ada");
    const grace = await frame(acme, "Grace");
    expect((await contradictions()).map((c) => c.kind).sort()).toEqual(["frame", "relation", "relation", "relation"]);
    await del(relationRoute, atGlobex);
    await del(frameRoute, grace);
    expect((await contradictions()).map((c) => c.kind)).toEqual(["relation"]);
    expect(flagsOf(ok(await callRoute(frameRoute.GET, { token: read, params: { ...P, id: ada } })).frame)).not.toContain("contradiction");
    // Initech goes, and its relation with it (a cascade): Melanie at Acme contradicts nothing left.
    await del(nodeRoute, initech);
    expect(await contradictions()).toEqual([]);
    expect(flagsOf(ok(await callRoute(relationRoute.GET, { token: read, params: { ...P, id: atAcme } })).relation)).not.toContain("contradiction");
    // Acme goes with its frame and relation: nothing is left keyed by their ids.
    await del(nodeRoute, acme);
    expect((await storeSql<{ n: unknown }>("kb", "select count(*) as n from item_state where item_id in (?, ?, ?, ?)", [ada, atAcme, atGlobex, grace])).map((r) => Number(r.n))).toEqual([0]);
  });

  it("a deleted proposal leaves the review queue", async () => {
    ok(await callRoute(policyRoute.PUT, { method: "PUT", token: admin, params: P, body: { modes: { thought: "review" } } }));
    const proposed = await thought("Melanie moved to Denver with her family");
    const queue = async () => ok(await callRoute(proposalsRoute.GET, { token: admin, params: P, url: "http://127.0.0.1/api/v1/stores/kb/proposals" })).total;
    expect(await queue()).toBe(1);
    // A person (the dashboard's editor, not held by the review policy) deletes it.
    await graphBackend().deleteThought({ store: "kb", id: proposed, actor: "user:editor" });
    expect(await queue()).toBe(0);
  });

  it("rows an earlier version left behind: the migration drops those of items gone and keeps those of items still there", async () => {
    const denver = await thought("Melanie moved to Denver with her family");
    const austin = await thought("Melanie moved to Austin with her family");
    // As an earlier version deleted: the item's row alone.
    await storeSql("kb", "delete from thoughts where id = ?", [austin]);
    expect(await contradictions()).toHaveLength(1);
    const file = env.backend === "pg" ? "drizzle/pg/store/0024_deleted_item_rows.sql" : "drizzle/index/0027_deleted_item_rows.sql";
    for (const statement of readFileSync(file, "utf8").split("--> statement-breakpoint")) await storeSql("kb", statement);
    expect(await contradictions()).toEqual([]);
    expect(flagsOf(ok(await callRoute(thoughtRoute.GET, { token: read, params: { ...P, id: denver } })).thought)).not.toContain("contradiction");
    expect((await storeSql<{ item_id: string }>("kb", "select item_id from item_state where kind = 'thought'")).map((r) => r.item_id)).toEqual([denver]);
  });
});
