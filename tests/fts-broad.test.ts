import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { ftsMatchFor, type HitRow } from "@/lib/index/fulltext";
import { searchInputSchema, searchStore, type SearchInput, type SearchResult } from "@/lib/index/search";
import { LISTED_TABLES } from "@/lib/index/word-list-upkeep";
import { BROAD_MATCH_ROWS, broadTopByBm25, clearFullTextMemos, MARK_CLOSE, MARK_OPEN, plainPhrases, snippetFor } from "@/lib/retrieval";
import { buildWordLists } from "@/lib/retrieval/word-lists";
import { stores } from "@/lib/stores/backend";
import { openStore } from "@/lib/stores/stores";
import { itSqliteOnly, onPg, searchHere, seedDocument, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";

/**
 * Broad full-text queries (thousands of matches) are ranked from the
 * table's word lists instead of FTS5 scoring every match. These tests
 * hold that path to the exhaustive FTS5 query on the same store: same rows,
 * same order, same scores and snippets, and never a stale answer after a write.
 * That planner is SQLite's (PostgreSQL ranks every match with ts_rank, see
 * lib/index/search-pg.ts); what a user sees of a broad query (full pages of
 * hits holding the words, filters applied, writes seen at once) is checked on
 * both backends in the last describe.
 */
const PLANNER = "the word-list bm25 planner held to FTS5 scoring every match, on index.db";

const DOCS = BROAD_MATCH_ROWS + 600;
const COMMON = ["rotation", "ledger", "backup", "kernel", "socket", "thread"];
const FILLER = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"];

/** Deterministic notes: common words in (nearly) every note at varying counts, lengths varying, a rare word in a few. */
function note(i: number): string {
  let x = i * 2654435761;
  const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const words: string[] = [];
  const length = 20 + Math.floor(rnd() * 80);
  for (let w = 0; w < length; w++) words.push(rnd() < 0.25 ? COMMON[Math.floor(rnd() * COMMON.length)] : FILLER[Math.floor(rnd() * FILLER.length)]);
  if (i % 400 === 7) words.push("zephyrine");
  return `# Note ${i}\n\n${words.join(" ")}`;
}

let env: TestEnv;

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_EMBED_WORKER: "false", DUALMIND_QUERY_BUDGET_MS: "60000" });
  await seedStore("broad");
  for (let start = 0; start < DOCS; start += 500) {
    const documents = Array.from({ length: Math.min(500, DOCS - start) }, (_, k) => ({ path: `${(start + k) % 2 ? "odd" : "even"}/n${start + k}.md`, content: note(start + k) }));
    await stores().putDocuments({ store: "broad", input: { documents }, actor: "test" });
  }
  // The word lists, as the server's upkeep builds them on a larger store (test-sized thresholds).
  if (!onPg) for (const { table, texts } of LISTED_TABLES) buildWordLists({ db: getStoreDb({ store: "broad" }).sqlite, table, texts: texts?.(getStoreDb({ store: "broad" }).sqlite), minRows: 300, minTableRows: 1 });
}, 180_000);
afterAll(async () => {
  await env.cleanup();
});
beforeEach(() => clearFullTextMemos());

const input = (q: string, extra: Partial<SearchInput> = {}) => searchInputSchema.parse({ q, limit: 10, mode: "fts", group: "chunk", ...extra });
/** The chunk leg as FTS5 ranks it: plain bm25 (no exact-form or proximity factor), a hit per chunk. */
const chunkSearch = (inp: SearchInput) => searchStore({ handle: openStore({ store: "broad" }), core: null, input: inp, tuning: { exactFormBoost: 0, proximity: { weight: 0, window: 5 } } });
type Answer = Pick<SearchResult, "results" | "has_more">;
const view = (r: Answer) => r.results.map((h) => ({ id: h.id, path: h.path, score: h.score, snippet: h.snippet, highlights: h.highlights }));

/**
 * The reference: FTS5 scoring every match in one joined statement (the
 * search as it was before broad queries were planned), with its own
 * snippet(), in the shape of a search result.
 */
function reference(inp: SearchInput): Answer {
  const handle = openStore({ store: "broad" });
  const match = ftsMatchFor({ input: inp, match: inp.match ?? "all" })!;
  const prefix = inp.prefix ? "and substr(d.path, 1, length(@prefix)) = @prefix" : "";
  const rows = handle.sqlite
    .prepare(
      `select c.id, c.chunk_id as chunkId, d.path, d.kind, c.chunk_index as chunkIndex, d.mtime as updatedAt, bm25(chunks_fts) as rank,
         snippet(chunks_fts, 0, '${MARK_OPEN}', '${MARK_CLOSE}', '…', 24) as snip
       from chunks_fts join chunks c on c.id = chunks_fts.rowid join documents d on d.doc_id = c.doc_id
       where chunks_fts match @match ${prefix} order by rank, c.id limit @take`,
    )
    .all({ match, take: inp.offset + inp.limit + 1, ...(inp.prefix ? { prefix: inp.prefix } : {}) }) as (Omit<HitRow, "text"> & { snip: string })[];
  const hits = rows.map((r) => ({ store: "broad", id: r.id, chunk_id: r.chunkId, path: r.path, kind: r.kind, chunk_index: r.chunkIndex, score: -r.rank, updated_at: r.updatedAt, ...snippetFor({ raw: r.snip, where: r }) }));
  return { results: hits.slice(inp.offset, inp.offset + inp.limit), has_more: hits.length > inp.offset + inp.limit };
}

/** The first answer, then two more (scores memoized); each checked against the reference. */
async function exhaustiveThenBroad(inp: SearchInput) {
  const first = await chunkSearch(inp);
  const exhaustive = reference(inp);
  expect(view(first)).toEqual(view(exhaustive));
  const built = await chunkSearch(inp);
  const cached = await chunkSearch(inp);
  return { exhaustive, built, cached };
}

describe("broad full-text queries", () => {
  it.runIf(!onPg).each([
    ["two common words, all", "rotation ledger", "all"],
    ["two common words, any", "rotation ledger", "any"],
    ["one common word", "kernel", "all"],
    ["common and rare, any", "zephyrine backup", "any"],
    ["four common words, any", "rotation ledger socket thread", "any"],
  ] as const)(`%s: same hits, order, scores and snippets as the exhaustive query [SQLite only: ${PLANNER}]`, async (_, q, match) => {
    const { exhaustive, built, cached } = await exhaustiveThenBroad(input(q, { match }));
    expect(exhaustive.results.length).toBe(10);
    expect(view(built)).toEqual(view(exhaustive));
    expect(view(cached)).toEqual(view(exhaustive));
    expect(cached.has_more).toBe(exhaustive.has_more);
  });

  itSqliteOnly("pages deep the same way (offset 40) and every hit contains the words (match=all)", PLANNER, async () => {
    const { exhaustive, cached } = await exhaustiveThenBroad(input("socket thread", { offset: 40, limit: 25 }));
    expect(view(cached)).toEqual(view(exhaustive));
    const handle = getStoreDb({ store: "broad" });
    for (const h of cached.results) {
      const text = (handle.sqlite.prepare("select text from chunks where id = ?").get(h.id) as { text: string }).text.toLowerCase();
      expect(text).toContain("socket");
      expect(text).toContain("thread");
    }
  });

  itSqliteOnly("applies filters exactly: a prefix keeps only its documents, in the exhaustive order", PLANNER, async () => {
    const { exhaustive, cached } = await exhaustiveThenBroad(input("rotation backup", { prefix: "odd/" }));
    expect(cached.results.length).toBe(10);
    expect(cached.results.every((h) => h.path.startsWith("odd/"))).toBe(true);
    expect(view(cached)).toEqual(view(exhaustive));
  });

  it("a filter's repeated values are one value: the same answer, and no new statement shape per repeat", async () => {
    const once = searchInputSchema.parse({ q: "rotation ledger", kind: "markdown", tags: "a" });
    const repeated = searchInputSchema.parse({ q: "rotation ledger", kind: Array(500).fill("markdown").join(","), tags: Array(500).fill("a").join(",") });
    expect(repeated.kind).toEqual(["markdown"]);
    expect(repeated.tags).toEqual(["a"]);
    expect(() => searchInputSchema.parse({ q: "x", tags: Array.from({ length: 33 }, (_, i) => `t${i}`).join(",") })).toThrow();
    const [a, b] = [await stores().search({ store: "broad", input: once }), await stores().search({ store: "broad", input: repeated })];
    expect(b.results.map((h) => h.id)).toEqual(a.results.map((h) => h.id));
  });

  it.runIf(!onPg).each([
    ["broad, all", "rotation ledger", {}],
    ["broad, any, second page", "kernel socket", { match: "any", offset: 10 }],
    ["filtered (exhaustive path)", "rotation backup", { prefix: "odd/" }],
  ] as const)(`the route's default (group=document), %s: each shown hit and passage has FTS5's own snippet of its chunk, in the same order on every call [SQLite only: ${PLANNER}]`, async (_, q, extra) => {
    const handle = openStore({ store: "broad" });
    const inp = searchInputSchema.parse({ q, limit: 10, mode: "fts", ...extra });
    expect(inp.group).toBe("document");
    const match = ftsMatchFor({ input: inp, match: inp.match ?? "all" })!;
    // The reference: FTS5's own snippet() of every match, by chunk id.
    const snippets = new Map(handle.sqlite.prepare(`select rowid, snippet(chunks_fts, 0, '${MARK_OPEN}', '${MARK_CLOSE}', '…', 24) from chunks_fts where chunks_fts match ?`).raw().all(match) as [number, string][]);
    const answers = [];
    // Broad queries are answered from the word lists; later calls from the scores memoized by the first.
    for (let i = 0; i < 3; i++) answers.push(await searchStore({ handle, core: null, input: inp }));
    for (const answer of answers) {
      expect(answer.results.length).toBe(10);
      expect(answer.results.map((h) => [h.id, h.score])).toEqual(answers[0].results.map((h) => [h.id, h.score]));
      for (const hit of answer.results) {
        const want = (id: number) => snippetFor({ raw: snippets.get(id)!, where: hit });
        expect(hit.snippet).not.toBe("");
        expect({ snippet: hit.snippet, highlights: hit.highlights }).toEqual(want(hit.id));
        expect(hit.passages!.length).toBeGreaterThan(0);
        for (const p of hit.passages!) expect({ snippet: p.snippet, highlights: p.highlights }).toEqual(want(p.id));
      }
    }
  });

  itSqliteOnly("a selective query keeps the exhaustive path: nothing is built and explain says plain bm25", PLANNER, async () => {
    const handle = openStore({ store: "broad" });
    for (let i = 0; i < 3; i++) {
      const r = await searchStore({ handle, core: null, input: input("zephyrine", { explain: true }) });
      expect(r.results.length).toBe(Math.ceil(DOCS / 400));
      expect(r.explain!.stages.find((s) => s.stage === "lexical")!.detail).not.toContain("word lists");
    }
    expect(broadTopByBm25({ db: handle.sqlite, schema: "main", table: "chunks_fts", match: '"zephyrine"' })).toBeNull();
  });

  itSqliteOnly("explain says when a broad query was answered from the word lists, and how many rows matched", PLANNER, async () => {
    const handle = openStore({ store: "broad" });
    const inp = input("rotation ledger", { explain: true, match: "any" });
    const first = await searchStore({ handle, core: null, input: inp });
    const third = await searchStore({ handle, core: null, input: inp });
    const detail = first.explain!.stages.find((s) => s.stage === "lexical")!.detail;
    expect(detail).toMatch(/broad query \((\d+) matches\): exact bm25 from the table's word lists/);
    expect(Number(detail.match(/\((\d+) matches\)/)![1])).toBeGreaterThan(BROAD_MATCH_ROWS);
    expect(third.results.map((h) => h.id)).toEqual(first.results.map((h) => h.id));
  });

  itSqliteOnly("a write is seen at once: a new note that outranks every other is the first hit of a query asked before", PLANNER, async () => {
    const inp = input("rotation ledger");
    await exhaustiveThenBroad(inp);
    const before = await chunkSearch(inp);
    expect(before.results[0].path).not.toBe("new/top.md");
    await seedDocument("broad", "new/top.md", "rotation ledger rotation ledger rotation ledger");
    const after = await chunkSearch(inp);
    expect(after.results[0].path).toBe("new/top.md");
    // And once scored again under the new index state, it still matches the exhaustive answer.
    clearFullTextMemos();
    const { exhaustive, cached } = await exhaustiveThenBroad(inp);
    expect(view(cached)).toEqual(view(exhaustive));
  });

  itSqliteOnly("advanced (syntax=fts5) expressions with operators are never planned, only plain quoted words", PLANNER, () => {
    expect(plainPhrases('"a" "b"')).toEqual({ phrases: ['"a"', '"b"'], mode: "all" });
    expect(plainPhrases('"a" OR "b" OR "c"')).toEqual({ phrases: ['"a"', '"b"', '"c"'], mode: "any" });
    expect(plainPhrases('"say ""hi"""')).toEqual({ phrases: ['"say ""hi"""'], mode: "all" });
    for (const advanced of ['"a" OR "b" "c"', "a b", '"a" NOT "b"', 'NEAR("a" "b")', '"a"*', 'text:"a"', '"a" AND "b"', '"unterminated']) expect(plainPhrases(advanced)).toBeNull();
  });
});

describe("a broad query as a user sees it, on this backend", () => {
  const ids = async (body: Record<string, unknown>) => (await searchHere("broad", { mode: "fts", group: "chunk", limit: 10, ...body })).results;
  const textOf = async (chunkId: string) => (await storeSql<{ text: string }>("broad", "select text from chunks where chunk_id = ?", [chunkId]))[0].text.toLowerCase();

  it("answers full pages, deep ones too, and every hit holds every word (match=all), the same on every call", async () => {
    const first = await ids({ q: "socket thread", offset: 40, limit: 25 });
    expect(first).toHaveLength(25);
    for (const h of first) {
      const text = await textOf(h.chunk_id);
      expect(text).toContain("socket");
      expect(text).toContain("thread");
    }
    expect((await ids({ q: "socket thread", offset: 40, limit: 25 })).map((h) => h.id)).toEqual(first.map((h) => h.id));
    // Pages follow on: the first page's last hit ranks above the second page's first.
    const [p1, p2] = [await ids({ q: "rotation ledger", match: "any" }), await ids({ q: "rotation ledger", match: "any", offset: 10 })];
    expect(p1).toHaveLength(10);
    expect(p2).toHaveLength(10);
    expect(p1.at(-1)!.score).toBeGreaterThanOrEqual(p2[0].score);
    expect(new Set([...p1, ...p2].map((h) => h.id)).size).toBe(20);
  });

  it("a prefix keeps only its documents", async () => {
    const hits = await ids({ q: "rotation backup", prefix: "odd/" });
    expect(hits).toHaveLength(10);
    expect(hits.every((h) => h.path.startsWith("odd/"))).toBe(true);
  });

  it("the rare word's notes come first when it is asked with a common one (match=any)", async () => {
    const hits = await ids({ q: "zephyrine backup", match: "any" });
    const rare = Math.ceil(DOCS / 400);
    for (const h of hits.slice(0, rare)) expect(await textOf(h.chunk_id)).toContain("zephyrine");
  });

  it("a write is seen at once: a new note that outranks every other is the first hit", async () => {
    const before = await ids({ q: "kernel socket" });
    expect(before[0].path).not.toBe("new/first.md");
    await seedDocument("broad", "new/first.md", "kernel socket kernel socket kernel socket");
    expect((await ids({ q: "kernel socket" }))[0].path).toBe("new/first.md");
    await stores().deleteDocument({ store: "broad", path: "new/first.md", actor: "test" });
    expect((await ids({ q: "kernel socket" })).map((h) => h.id)).toEqual(before.map((h) => h.id));
  });
});
