import { beforeEach, describe, expect, it } from "vitest";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import * as policyRoute from "@/app/api/v1/stores/[store]/policy/write/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import { callRoute } from "./helpers";
import { drainEmbeddings, onPg, storeSql } from "./backend";
import { hiddenMemoryDocumentSql, shownRowSql } from "@/lib/index/item-state";
import { AGENTS, DAY, KB as P, useGovernedStore } from "./governed-store";

/**
 * Items a reader cannot see (an untrusted agent's proposals under review) do not take the places of items it can:
 * remember's full-text and vector legs read past the hidden ones, so a flood of proposals that match a question
 * better than the one real answer does not push that answer out of the candidates, for any reader.
 */
const kb = useGovernedStore({ tokens: { admin: AGENTS.admin, trusted: AGENTS.curator, scribe: AGENTS.scribe, reader: AGENTS.reader } });

beforeEach(async () => {
  const policy = await callRoute(policyRoute.PUT, { method: "PUT", token: kb.admin, params: P, body: { modes: { thought: "review", memory: "review", learning: "review" }, trusted: ["curator"] } });
  expect(policy.status, JSON.stringify(policy.json)).toBe(200);
});

const ids = async (query: string, extra: Record<string, unknown> = {}) => {
  const r = await callRoute(rememberRoute.POST, { token: kb.reader, params: P, body: { query, kinds: ["thought"], ...extra } });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return (r.json.results as { id: string; item_status?: string }[]).map((x) => x.id);
};

describe("hidden items do not crowd remember's candidates", () => {
  it("the real answer stays in remember's results past more proposals than its candidates, each matching the question better", async () => {
    const real = await callRoute(thoughtsRoute.POST, { token: kb.trusted, params: P, body: { content: "The harbour ferry timetable changed: boats leave at nine now.", timestamp: Date.now() - 400 * DAY } });
    expect(real.status, JSON.stringify(real.json)).toBe(201);
    const realId = real.json.thought.id as string;
    const candidates = 10;
    const flood: string[] = [];
    for (let i = 0; i < candidates + 5; i++) {
      const r = await callRoute(thoughtsRoute.POST, { token: kb.scribe, params: P, body: { content: `harbour ferry timetable harbour ferry timetable notice ${i}` } });
      expect(r.json.proposal?.status, JSON.stringify(r.json)).toBe("proposed");
      flood.push(r.json.thought.id);
    }
    // Before any vector exists remember answers from the full-text leg alone; then from both legs.
    for (const stage of ["full-text", "full-text and vectors"]) {
      if (stage !== "full-text") await drainEmbeddings(["kb"]);
      const got = await ids("harbour ferry timetable", { candidates });
      expect(got, stage).toContain(realId);
      for (const id of flood) expect(got, stage).not.toContain(id);
    }
    // A reader who asks for proposals sees them, marked, and the real answer still.
    const withProposed = await ids("harbour ferry timetable", { candidates: 40, include_proposed: true, limit: 50 });
    expect(withProposed).toEqual(expect.arrayContaining([realId, ...flood]));
  });
});

/** Writes `n` untrusted proposals that match "harbour ferry timetable" better than the real answers do; their ids. */
async function flood(n: number, write: (i: number) => Promise<{ status: number; json: Record<string, unknown> & { proposal?: { status: string } } }>, idOf: (json: Record<string, unknown>) => string): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await write(i);
    expect(r.json.proposal?.status, JSON.stringify(r.json)).toBe("proposed");
    out.push(idOf(r.json));
  }
  return out;
}

describe("hidden items do not crowd search's and recall's pages", () => {
  it("search (fts and hybrid) fills its page with the visible answers past more proposals than its pool, each matching better", async () => {
    const real: string[] = [];
    for (const i of [1, 2, 3]) {
      const r = await callRoute(memoriesRoute.POST, { token: kb.trusted, params: P, body: { path: `ferry/real-${i}`, body: `Real answer ${i}: the harbour ferry timetable changed, boats leave at nine now.` } });
      expect(r.status, JSON.stringify(r.json)).toBe(201);
      real.push(`memory/ferry/real-${i}.md`);
    }
    // More than hybrid's pool (POOL, 50) and its vector leg's first KNN (pool + 20).
    const proposed = await flood(80, (i) => callRoute(memoriesRoute.POST, { token: kb.scribe, params: P, body: { path: `ferry/notice-${i}`, body: `harbour ferry timetable harbour ferry timetable notice ${i}` } }), () => "");
    expect(proposed).toHaveLength(80);
    const paths = async (mode: string, extra: Record<string, unknown> = {}) => {
      const r = await callRoute(searchRoute.POST, { token: kb.reader, params: P, body: { q: "harbour ferry timetable", mode, group: "chunk", limit: 3, ...extra } });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return (r.json.results as { path: string; item_status?: string }[]).map((h) => `${h.path}${h.item_status ? ` (${h.item_status})` : ""}`);
    };
    for (const stage of ["full-text", "full-text and vectors"]) {
      if (stage !== "full-text") await drainEmbeddings(["kb"]);
      for (const mode of ["fts", "hybrid"]) expect((await paths(mode)).sort(), `${mode}, ${stage}`).toEqual(real);
    }
    // A reader who asks for proposals sees them, marked.
    const withProposed = await paths("fts", { include_proposed: true, limit: 100 });
    expect(withProposed.filter((p) => p.endsWith("(proposed)"))).toHaveLength(80);
    expect(withProposed).toEqual(expect.arrayContaining(real));
  });

  it("recall fills top_k with the visible learnings past more proposals than its pool, each matching better", async () => {
    const real: number[] = [];
    for (const i of [1, 2, 3]) {
      const r = await callRoute(learningsRoute.POST, { token: kb.trusted, params: P, body: { predicate: `ferry_real_${i}`, description: `real answer ${i}: the harbour ferry timetable changed` } });
      expect(r.status, JSON.stringify(r.json)).toBe(201);
      real.push(r.json.learning.id);
    }
    // More than recall's pool (twice top_k, at least 10).
    const proposed = await flood(30, (i) => callRoute(learningsRoute.POST, { token: kb.scribe, params: P, body: { predicate: `ferry_notice_${i}`, description: `harbour ferry timetable harbour ferry timetable notice ${i}` } }), (json) => String((json.learning as { id: number }).id));
    const recalled = async (extra: Record<string, unknown> = {}) => {
      const r = await callRoute(recallRoute.POST, { token: kb.reader, params: P, body: { query: "harbour ferry timetable", kinds: ["learning"], top_k: 3, min_score: 0, ...extra } });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return (r.json.learnings as { id: number }[]).map((l) => l.id);
    };
    for (const stage of ["full-text", "full-text and vectors"]) {
      if (stage !== "full-text") await drainEmbeddings(["kb"]);
      for (const signals of ["lexical", "hybrid"]) expect((await recalled({ signals })).sort((a, b) => a - b), `${signals}, ${stage}`).toEqual(real);
    }
    const withProposed = await recalled({ include_proposed: true, top_k: 50, signals: "lexical" });
    expect(withProposed.map(String)).toEqual(expect.arrayContaining(proposed));
  });
});

describe("the hidden-item filter's plan", () => {
  it("search's and recall's filter looks up each candidate's state by item_state's primary key among 20,000 hidden items, on both engines", async () => {
    const rows = 20_000;
    // A flood of proposals and retired items, as a store under review accumulates them.
    const series = onPg ? `generate_series(1, ${rows}) g(n)` : `(with recursive g(n) as (select 1 union all select n + 1 from g where n < ${rows}) select n from g) g`;
    for (const kind of ["memory", "trace"]) await storeSql("kb", `insert into item_state (kind, item_id, status, recorded_at, updated_at) select '${kind}', ${kind === "memory" ? "'flood/n' || n" : "cast(n as text)"}, case when n % 2 = 0 then 'proposed' else 'retired' end, 0, 0 from ${series}`);
    await storeSql("kb", onPg ? "analyze item_state" : "analyze");
    const filter = { includeProposed: false };
    // The filters as search (documents d) and recall (traces t) put them in their statements, over a page of candidates.
    const statements = [
      `select d.path from documents d where d.doc_id in (1, 2, 3) and ${hiddenMemoryDocumentSql({ filter })}`,
      `select t.id from reasoning_traces t where t.id in (1, 2, 3) and ${shownRowSql({ kind: "trace", id: "cast(t.id as text)", filter })}`,
    ];
    for (const statement of statements) {
      if (onPg) {
        const [plan] = await storeSql<{ "QUERY PLAN": unknown }>("kb", `explain (format json) ${statement}`);
        const text = JSON.stringify(plan["QUERY PLAN"]);
        expect(text, statement).toContain('"Index Name":"item_state_pkey"');
        expect(text, statement).not.toMatch(/"Node Type":"Seq Scan"[^}]*"Relation Name":"item_state"/);
      } else {
        const plan = (await storeSql<{ detail: string }>("kb", `explain query plan ${statement}`)).map((p) => p.detail);
        expect(plan, statement).toContain("CORRELATED SCALAR SUBQUERY 1");
        expect(plan, statement).toContain("SEARCH ist USING INDEX sqlite_autoindex_item_state_1 (kind=? AND item_id=?)");
      }
    }
  });
});
