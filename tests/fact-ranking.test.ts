import { describe, expect, it } from "vitest";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as nodesRoute from "@/app/api/v1/stores/[store]/nodes/route";
import * as framesRoute from "@/app/api/v1/stores/[store]/frames/route";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import * as policyRoute from "@/app/api/v1/stores/[store]/policy/write/route";
import * as rejectRoute from "@/app/api/v1/stores/[store]/proposals/[kind]/[id]/reject/route";
import { FACT_MATCH_LIMITS, describedKeyStrengths, factLookupWords, factMatches, factRangeQuery } from "@/lib/index/fact-match";
import { itemStateTable } from "@/lib/index/item-state";
import { read as readOn, select } from "@/lib/db/port";
import { currentEngine } from "@/lib/db/engine";
import { storeEngineOf } from "@/lib/stores/backend";
import { callRoute } from "./helpers";
import { AGENTS, DAY, KB as P, useGovernedStore } from "./governed-store";
import { drainEmbeddings, onPg, seedToken, storeSql } from "./backend";

/**
 * The current fact first (lib/index/fact-match.ts): when a query names the subject and property a writer gave, the
 * value that holds answers first, by default the current one and under as_of the one that held then, above items that
 * only share the query's words; the lookup is bounded. And remember reads a node's visible frames only.
 */
const kb = useGovernedStore({ tokens: { write: AGENTS.curator, read: AGENTS.reader } });
const T1 = Date.UTC(2023, 0, 20);
const T2 = T1 + 180 * DAY;
const BETWEEN = T1 + 90 * DAY;

const created = (r: { status: number; json: unknown }) => {
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  return r.json as Record<string, { id: string }>;
};
const think = async (content: string, timestamp: number, fact: Record<string, unknown> = {}) => created(await callRoute(thoughtsRoute.POST, { token: kb.write, params: P, body: { content, timestamp, ...fact } })).thought.id;
type Result = { id: string; kind: string; matched_by: string[]; breakdown: { fact_match: number; procedure_match: number } };
const remember = async (query: string, extra: Record<string, unknown> = {}) => {
  const r = await callRoute(rememberRoute.POST, { token: kb.read, params: P, body: { query, ...extra } });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json.results as Result[];
};

/** Turns that say "Jon" and "work" more often than either value of his work does. */
async function distractors(times: number[]) {
  const lines = ["Jon: work has been so much work lately, Jon is tired of work talk.", "Gina: Jon, how is work? Work work work, says Jon.", "Jon: I will work on my routines after work tonight.", "Jon: Jon loves to work out at the gym before work."];
  for (const [i, line] of lines.entries()) await think(line, times[i % times.length]);
}

describe("the current value of a named subject and property answers first", () => {
  it("remember: the current value first by default, the old one first under as_of, above turns that only share the words", async () => {
    const old = await think("Jon: I lost my job as a banker yesterday.", T1, { subject: "Jon", property: "work" });
    const current = await think("Jon: I got a temp job to cover expenses while the studio looks for investors.", T2, { subject: "Jon", property: "work" });
    await distractors([T1 + DAY, T2 + DAY, T2 - DAY, BETWEEN - DAY]);
    const now = await remember("What does Jon do for work now?", { kinds: ["thought"] });
    expect(now[0].id).toBe(current);
    expect(now[0].breakdown.fact_match).toBe(1);
    expect(now[0].matched_by).toContain("thought_fact");
    // The superseded value is not shown by default.
    expect(now.map((r) => r.id)).not.toContain(old);
    const then = await remember("What does Jon do for work now?", { kinds: ["thought"], as_of: BETWEEN });
    expect(then[0].id).toBe(old);
    expect(then.map((r) => r.id)).not.toContain(current);
    // Without the key's words the text decides: the query names no property of Jon's.
    const other = await remember("What does Jon do at the gym?", { kinds: ["thought"] });
    expect(other.every((r) => r.breakdown.fact_match === 0)).toBe(true);
  });

  it("the property is compared after the full-text tokenizer's stemming: 'adopting' names 'adoption'", async () => {
    await think("Caroline: I am researching adoption agencies.", T1, { subject: "Caroline", property: "adoption" });
    const current = await think("Caroline: I passed the agency interviews last Friday!", T2, { subject: "Caroline", property: "adoption" });
    for (const [i, line] of ["Caroline: adopting a kid is a dream, adopting is on my mind.", "Melanie: Caroline, adopting takes courage; how is adopting going?"].entries()) await think(line, T2 - (i + 1) * DAY);
    const results = await remember("How is Caroline doing with adopting?", { kinds: ["thought"] });
    expect(results[0].id).toBe(current);
  });

  it("search hybrid: the current memory of a named key first; the superseded one not shown", async () => {
    const body = (path: string, text: string, extra: Record<string, unknown> = {}) => callRoute(memoriesRoute.POST, { token: kb.write, params: P, body: { path, body: text, ...extra } });
    created(await body("jon/work-1", "Jon lost his job as a banker.", { subject: "Jon", property: "work", valid_from: T1 }));
    created(await body("jon/work-2", "Jon took a temp job while the studio looks for investors.", { subject: "Jon", property: "work", valid_from: T2 }));
    for (const [i, line] of ["Jon talks about work all the time: work, work, work.", "Gina asked Jon about work and Jon said work is fine.", "Jon does his work out before work."].entries()) created(await body(`chat/${i}`, line));
    await drainEmbeddings(["kb"]);
    const r = await callRoute(searchRoute.POST, { token: kb.read, params: P, body: { q: "What does Jon do for work now?", mode: "hybrid" } });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const paths = r.json.results.map((h: { path: string }) => h.path);
    expect(r.json.effective_mode).toBe("hybrid");
    expect(paths[0]).toBe("memory/jon/work-2.md");
    expect(paths).not.toContain("memory/jon/work-1.md");
  });
});

describe("the lookup is bounded", () => {
  it("a query naming many subjects reads at most maxWords subjects' ranges, each at most maxRowsPerWord rows", async () => {
    // One subject with more facts than one range reads, and more subjects than one query looks up.
    const many = FACT_MATCH_LIMITS.maxRowsPerWord + 6;
    for (let i = 0; i < many; i++) await think(`Ann: note number ${i}.`, T1 + i * DAY, { subject: "Ann", property: `note ${i}` });
    const subjects = Array.from({ length: FACT_MATCH_LIMITS.maxWords + 4 }, (_, i) => `person${String.fromCharCode(97 + i)}`);
    for (const s of subjects) await think(`${s}: my city is Oslo.`, T1, { subject: s, property: "city" });
    const handle = await storeEngineOf(currentEngine()).open("kb");
    // The query names every fact of Ann (each key's property is "note <n>", and it asks every number): one range reads at most maxRowsPerWord of them.
    const ann = await factMatches({ handle, kind: "thought", query: `ann note ${Array.from({ length: many }, (_, i) => i).join(" ")}` });
    expect(ann).toHaveLength(FACT_MATCH_LIMITS.maxRowsPerWord);
    const query = `${subjects.join(" ")} city`;
    expect(factLookupWords({ query })).toHaveLength(FACT_MATCH_LIMITS.maxWords);
    const named = await factMatches({ handle, kind: "thought", query });
    // Only the subjects among the words looked up are named, one fact each; the rest of the query's subjects are not read.
    expect(named).toHaveLength(FACT_MATCH_LIMITS.maxWords);
    // remember answers within its own limit.
    expect((await remember(query, { kinds: ["thought"], limit: 5 })).length).toBe(5);
  });
});

describe("the lookup reads only what the reader's view can show", () => {
  it("more than maxRowsPerWord proposals of an untrusted agent naming the same subject do not take the active fact's boost, pending or rejected", async () => {
    const admin = await seedToken({ label: "admin", agent_id: "boss", scopes: ["read", "write", "admin"] });
    const scribe = await seedToken({ label: "scribe", agent_id: "scribe", scopes: ["read", "write"] });
    const hobby = await think("Caroline: painting sunsets is what I love doing on weekends.", T1, { subject: "Caroline", property: "hobby" });
    const policy = await callRoute(policyRoute.PUT, { method: "PUT", token: admin, params: P, body: { modes: { thought: "review" }, trusted: ["curator"] } });
    expect(policy.status, JSON.stringify(policy.json)).toBe(200);
    // Keys "caroline␟a00" … sort before "caroline␟hobby": one range in key order over every status would read only them.
    const proposals: string[] = [];
    for (let i = 0; i < FACT_MATCH_LIMITS.maxRowsPerWord + 6; i++) {
      const r = await callRoute(thoughtsRoute.POST, { token: scribe, params: P, body: { content: `Caroline: entry ${i} of my list.`, timestamp: T2, subject: "Caroline", property: `a${String(i).padStart(2, "0")}` } });
      expect(r.json.proposal?.status, JSON.stringify(r.json)).toBe("proposed");
      proposals.push(r.json.thought.id);
    }
    const hobbyResult = async (extra: Record<string, unknown> = {}) => (await remember("What is Caroline's hobby?", { kinds: ["thought"], ...extra })).find((r) => r.id === hobby);
    expect((await hobbyResult())?.breakdown.fact_match).toBe(1);
    expect((await hobbyResult())?.matched_by).toContain("thought_fact");
    // A reader who asks for proposals too reads them in a range of their own: the active fact keeps its boost.
    expect((await hobbyResult({ include_proposed: true }))?.breakdown.fact_match).toBe(1);
    const handle = await storeEngineOf(currentEngine()).open("kb");
    const named = await factMatches({ handle, kind: "thought", query: "Caroline hobby a00", view: { includeProposed: true } });
    expect(named.map((m) => m.id)).toEqual(expect.arrayContaining([hobby, proposals[0]]));
    // Rejected proposals keep their key; no view reads them.
    for (const id of proposals) expect((await callRoute(rejectRoute.POST, { token: kb.write, params: { ...P, kind: "thought", id }, body: { reason: "spam" } })).status).toBe(200);
    expect((await hobbyResult())?.breakdown.fact_match).toBe(1);
    expect((await factMatches({ handle, kind: "thought", query: "Caroline a00 a01", view: { includeProposed: true, includeRetired: true } }))).toEqual([]);
  });

  it("remember admits at most `candidates` thoughts by their fact key alone", async () => {
    const n = 12;
    // Named by the query's words only through their keys: the text shares none of them.
    for (let i = 0; i < n; i++) await think(`Quiet harbour evening, gulls over entry ${"abcdefghijkl"[i]}x.`, T1 + i * DAY, { subject: "Ann", property: `note ${i}` });
    const query = `ann note ${Array.from({ length: n }, (_, i) => i).join(" ")}`;
    const onlyByKey = (results: Result[]) => results.filter((r) => r.matched_by.length === 1 && r.matched_by[0] === "thought_fact");
    expect(onlyByKey(await remember(query, { kinds: ["thought"], candidates: 3, limit: 50 }))).toHaveLength(3);
    expect(onlyByKey(await remember(query, { kinds: ["thought"], candidates: 5, limit: 50 }))).toHaveLength(5);
  });
});

describe("the lookup's plan", () => {
  it("each range is one bounded range of item_state_fact_lookup_idx among 20,000 fact rows, on both engines", async () => {
    const rows = 20_000;
    // Facts of many subjects, most of them proposals, as a store under review accumulates them.
    if (onPg) {
      await storeSql("kb", `insert into item_state (kind, item_id, status, recorded_at, updated_at, fact_key, fact_value) select 'thought', 'seed-' || g, case when g % 4 = 0 then 'active' else 'proposed' end, 0, 0, 'subject' || g || chr(31) || 'city', 'oslo' from generate_series(1, ${rows}) g`);
      await storeSql("kb", "analyze item_state");
    } else {
      await storeSql("kb", `with recursive g(n) as (select 1 union all select n + 1 from g where n < ${rows}) insert into item_state (kind, item_id, status, recorded_at, updated_at, fact_key, fact_value) select 'thought', 'seed-' || n, case when n % 4 = 0 then 'active' else 'proposed' end, 0, 0, 'subject' || n || char(31) || 'city', 'oslo' from g`);
      await storeSql("kb", "analyze");
    }
    const handle = await storeEngineOf(currentEngine()).open("kb");
    // The statement the lookup runs, built by its own code on this engine.
    let statement: { sql: string; params: unknown[] } | undefined;
    const found = await readOn(handle, select({ s: itemStateTable }, (db, { s }, q) => {
      const range = factRangeQuery({ db, s, q, kind: "thought", status: "active", word: "subject4" });
      statement = range.toSQL();
      return range;
    }));
    expect(found).toEqual([{ itemId: "seed-4", factKey: "subject4\u001fcity", factValue: "oslo" }]);
    if (onPg) {
      const [plan] = await storeSql<{ "QUERY PLAN": unknown }>("kb", `explain (format json) ${statement!.sql}`, statement!.params);
      const text = JSON.stringify(plan["QUERY PLAN"]);
      expect(text).toContain('"Index Name":"item_state_fact_lookup_idx"');
      expect(text).not.toContain("Seq Scan");
    } else {
      const plan = await storeSql<{ detail: string }>("kb", `explain query plan ${statement!.sql}`, statement!.params);
      expect(plan.map((p) => p.detail)).toEqual(["SEARCH item_state USING INDEX item_state_fact_lookup_idx (kind=? AND status=? AND fact_key>? AND fact_key<?)"]);
    }
  });
});

describe("remember reads a node's visible frames only", () => {
  it("a superseded procedural frame no longer counts in procedure_match by default; under as_of it does", async () => {
    const node = created(await callRoute(nodesRoute.POST, { token: kb.write, params: P, body: { name: "flux machine", entity_type: "concept" } })).node.id;
    const frame = (properties: Record<string, string>) => callRoute(framesRoute.POST, { token: kb.write, params: P, body: { node_id: node, column: "procedural", properties, exclusive: true } });
    created(await frame({ step: "calibrate the capacitor" }));
    // A moment when the node and the first frame existed and the second did not (each write's time is its event time).
    const tick = () => new Promise((r) => setTimeout(r, 5));
    await tick();
    const between = Date.now();
    await tick();
    created(await frame({ step: "restart the harbour pump" }));
    const procedureOf = (results: Result[]) => results.find((r) => r.id === node)?.breakdown.procedure_match;
    expect(procedureOf(await remember("flux machine calibrate capacitor", { kinds: ["node"] }))).toBe(0);
    expect(procedureOf(await remember("flux machine calibrate capacitor", { kinds: ["node"], as_of: between }))).toBeGreaterThan(0);
    expect(procedureOf(await remember("flux machine restart harbour pump", { kinds: ["node"] }))).toBeGreaterThan(0);
  });
});

/** Turns about jobs and Gina that state no fact: they share the question's words, the current value does not. */
const CHATTER = ["Jon: Gina, the job market is rough, every job posting wants years of experience.", "Gina: Jon, a job interview is tomorrow for my friend, so nervous for her.", "Gina: my cousin's job is so dull, she says."];

describe("a fact known by the values it held (a property said in other words)", () => {
  it("remember: the current value first for the property said in other words, the old one under as_of", async () => {
    const old = await think("Gina: I lost my job at Door Dash this month.", T1, { subject: "Gina", property: "work" });
    const current = await think("Gina: My online clothes store is open!", T2, { subject: "Gina", property: "work" });
    await think("Gina: I teamed up with a local artist for some cool designs.", T2, { subject: "Gina", property: "designs" });
    for (const [i, line] of CHATTER.entries()) await think(line, T1 + (i + 1) * 5 * DAY);
    await drainEmbeddings(["kb"]);
    const now = await remember("What is Gina's job now?", { kinds: ["thought"] });
    expect(now[0].id).toBe(current);
    expect(now[0].matched_by).toContain("thought_fact");
    expect(now[0].breakdown.fact_match).toBe(1);
    expect(now.map((r) => r.id)).not.toContain(old);
    const then = await remember("What is Gina's job now?", { kinds: ["thought"], as_of: BETWEEN });
    expect(then[0].id).toBe(old);
    // The designs key holds none of the question's words: not boosted.
    expect(now.filter((r) => r.breakdown.fact_match > 0).map((r) => r.id)).toEqual([current]);
  });

  it("a tie between two keys' histories describes neither", async () => {
    await think("Gina: I lost my job at Door Dash this month.", T1, { subject: "Gina", property: "work" });
    await think("Gina: My online clothes store is open!", T2, { subject: "Gina", property: "work" });
    await think("Gina: volunteering feels like a second job some weeks.", T2, { subject: "Gina", property: "volunteering" });
    for (const [i, line] of CHATTER.entries()) await think(line, T1 + (i + 1) * 5 * DAY);
    const now = await remember("What is Gina's job now?", { kinds: ["thought"] });
    expect(now.length).toBeGreaterThan(0);
    expect(now.every((r) => r.breakdown.fact_match === 0)).toBe(true);
  });

  it("search hybrid: the current memory first for the property said in other words", async () => {
    const body = (path: string, text: string, extra: Record<string, unknown> = {}) => callRoute(memoriesRoute.POST, { token: kb.write, params: P, body: { path, body: text, ...extra } });
    expect((await body("gina/work-1", "Gina: I lost my job at Door Dash this month.", { subject: "Gina", property: "work", valid_from: T1 })).status).toBe(201);
    expect((await body("gina/work-2", "Gina: My online clothes store is open!", { subject: "Gina", property: "work", valid_from: T2 })).status).toBe(201);
    for (const [i, line] of CHATTER.entries()) expect((await body(`chatter/${i}`, line)).status).toBe(201);
    await drainEmbeddings(["kb"]);
    const r = await callRoute(searchRoute.POST, { token: kb.read, params: P, body: { q: "What is Gina's job now?", mode: "hybrid" } });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const paths = r.json.results.map((h: { path: string }) => h.path);
    expect(paths[0]).toBe("memory/gina/work-2.md");
    expect(paths).not.toContain("memory/gina/work-1.md");
  });
  it("a deleted memory's old value, waiting in the trash, no longer describes its key", async () => {
    const body = (path: string, text: string, extra: Record<string, unknown> = {}) => callRoute(memoriesRoute.POST, { token: kb.write, params: P, body: { path, body: text, ...extra } });
    expect((await body("gina/work-1", "Gina: I lost my job at Door Dash this month.", { subject: "Gina", property: "work", valid_from: T1 })).status).toBe(201);
    // A memory's item id is its path.
    expect((await body("gina/work-2", "Gina: My online clothes store is open!", { subject: "Gina", property: "work", valid_from: T2 })).status).toBe(201);
    const handle = await storeEngineOf(currentEngine()).open("kb");
    const query = "What is Gina's job now?";
    expect((await factMatches({ handle, kind: "memory", query })).map((m) => m.id)).toEqual(["gina/work-2"]);
    const url = `http://127.0.0.1/api/v1/stores/kb/memories?${new URLSearchParams({ path: "gina/work-1" })}`;
    expect((await callRoute(memoriesRoute.DELETE, { method: "DELETE", token: kb.write, params: P, url })).status).toBeLessThan(300);
    // Its state waits with the trash entry (a restore brings it back), but says nothing of the store's facts meanwhile.
    expect(await factMatches({ handle, kind: "memory", query })).toEqual([]);
  });
});

describe("describedKeyStrengths", () => {
  const key = (subject: string, property: string) => `${subject}\u001f${property}`;
  it("needs most of the question's other words in one key's history, and one key alone highest", () => {
    const keys = [
      { key: key("gina", "work"), values: ["i lost my job at door dash", "my online clothes store is open"] },
      { key: key("gina", "designs"), values: ["cool designs with a local artist"] },
    ];
    expect([...describedKeyStrengths({ query: "What is Gina's job now?", keys })]).toEqual([[key("gina", "work"), 1]]);
    // One of three other words ("job" of "job", "tattoo", "parlor"): not most of the question.
    expect(describedKeyStrengths({ query: "Which job did Gina's tattoo parlor offer?", keys }).size).toBe(0);
    // The subject not named: nothing.
    expect(describedKeyStrengths({ query: "What is Jon's job now?", keys }).size).toBe(0);
  });
});
