import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { broadTopByBm25, clearFullTextMemos } from "@/lib/retrieval";
import { RANKED_MEMO_BYTES, RANKED_MEMO_ENTRIES, rankedMemoSize } from "@/lib/retrieval/bm25-top";
import { resetConfigForTests } from "@/lib/config";
import { LISTED_TABLES, wordListUpkeepTurn } from "@/lib/index/word-list-upkeep";
import Database from "better-sqlite3";
import { vocabTables } from "@/lib/retrieval/fts-tokens";
import { buildWordLists, clearWordListMemos, dropWordLists, SCORE_MEMO_BYTES, SCORE_MEMO_ENTRIES, wordListMemoSize, wordListScores, wordListsStatus, wordListsStep } from "@/lib/retrieval/word-lists";
import { stores } from "@/lib/stores/backend";
import { openStore } from "@/lib/stores/stores";
import { onPg, seedStore, seedThought, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";
import { broadNote } from "./fixtures/broad-notes";

/**
 * Issue 19, a broad query's first sight: the word lists (every row of each
 * common word with its count, every row's length, kept in index.db) rank a
 * broad query without FTS5 scoring every match. What a user must get is
 * FTS5's own answer: every row's score to the last bit, before and after
 * writes (logged changes scored from their text until folded in), and the
 * other paths' answer while the lists are half built. SQLite only: the
 * lists derive from FTS5's index (PostgreSQL ranks with ts_rank).
 */
const TOKEN = "bootstrap-token-for-word-list-tests-0123456789";
const DOCS = 2600;
/** The broad-query notes (tests/fixtures/broad-notes.ts), a little shorter; `salt` gives a note other text. */
const note = (i: number, salt = 0) => broadNote(i, { salt, minWords: 10 });

let env: TestEnv;
const db = () => openStore({ store: "lists" }).sqlite;
/** Both kept tables (chunks, whole documents), as the server's upkeep keeps them, with test-sized thresholds. */
/** Search's two tables, which the notes fill. */
const SEARCH_TABLES = LISTED_TABLES.filter((t) => t.table === "chunks_fts" || t.table === "documents_fts");
const build = (maxSteps?: number) => {
  for (const { table, texts } of SEARCH_TABLES) buildWordLists({ db: db(), table, texts: texts?.(db()), minRows: 300, minTableRows: 1, maxSteps });
};
const TABLES = SEARCH_TABLES.map((t) => t.table);

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN, DUALMIND_EMBED_WORKER: "false", DUALMIND_QUERY_BUDGET_MS: "60000" });
  if (onPg) return;
  await seedStore("lists");
  for (let start = 0; start < DOCS; start += 500) {
    const documents = Array.from({ length: Math.min(500, DOCS - start) }, (_, k) => ({ path: `n/${start + k}.md`, content: note(start + k) }));
    await stores().putDocuments({ store: "lists", input: { documents }, actor: "test" });
  }
}, 300_000);
afterAll(async () => {
  await env.cleanup();
});
beforeEach(() => clearFullTextMemos());

/** FTS5's score (positive) of every row the expression matches, by rowid. */
function fts5Scores(match: string, table = "chunks_fts"): Map<number, number> {
  const rows = db().prepare(`select rowid as id, -bm25(${table}) as s from ${table} where ${table} match ? order by rowid`).all(match) as { id: number; s: number }[];
  return new Map(rows.map((r) => [r.id, r.s]));
}
function listScores(match: string, table = "chunks_fts"): Map<number, number> | null {
  const texts = LISTED_TABLES.find((t) => t.table === table)!.texts?.(db());
  const got = wordListScores({ db: db(), schema: "main", table, match, texts });
  return got ? new Map(Array.from(got.ids, (id, i) => [id, got.scores[i]])) : null;
}
/** Both tables' list scores against FTS5's, every row to the last bit. */
function expectFts5Scores(when: string): void {
  for (const table of TABLES) for (const match of EXPRESSIONS) expect(listScores(match, table), `${table} ${match} (${when})`).toEqual(fts5Scores(match, table));
}
/** The route's answer from the lists and with FTS5 scoring every match: the same documents, chunks and scores. */
async function expectSameAnswerWithoutLists(body: Record<string, unknown>): Promise<void> {
  clearFullTextMemos();
  const r = await searchStore({ handle: openStore({ store: "lists" }), core: null, input: searchInputSchema.parse({ mode: "fts", ...body }) });
  expect(r.results.map((h) => ({ path: h.path, id: h.id, score: h.score }))).toEqual(await exhaustiveAnswer(body));
}
/**
 * The i-th of many distinct broad expressions (a memo's key is the expression's text): the two common words and a
 * word no row holds, so each costs what one broad query costs, whatever i.
 */
const distinctBroad = (i: number) => `"rotation" OR "ledger" OR "absent${i}"`;
const EXPRESSIONS = ['"rotation" OR "ledger"', '"rotation" "ledger"', '"ledger" OR "socket"', '"socket" OR "rotation" OR "alpha"', '"rotation" OR "rotation"'];

const search = (body: Record<string, unknown>) => callRoute(searchRoute.POST, { token: TOKEN, params: { store: "lists" }, body });
type Hit = { path: string; id: number; score: number };

/**
 * The route's answer with FTS5 scoring every match: asked inside an open
 * transaction on the store's connection, where the lists step aside (the
 * last test of the first describe shows why and that they do).
 */
async function exhaustiveAnswer(body: Record<string, unknown>): Promise<Hit[]> {
  const sqlite = db();
  sqlite.exec("begin");
  try {
    clearFullTextMemos();
    const r = await searchStore({ handle: openStore({ store: "lists" }), core: null, input: searchInputSchema.parse({ mode: "fts", ...body }) });
    return r.results.map((h) => ({ path: h.path, id: h.id, score: h.score }));
  } finally {
    sqlite.exec("rollback");
    clearFullTextMemos();
  }
}

describe.skipIf(onPg)("word lists: a broad query ranked from stored counts, FTS5's answer exactly", () => {
  it("half built, the lists are not used and the route still gives FTS5's answer; built, every row's score is FTS5's to the last bit", async () => {
    build(2);
    for (const table of TABLES) expect(wordListsStatus({ db: db(), table })?.status).toBe("building");
    for (const table of TABLES) expect(listScores('"rotation" OR "ledger"', table)).toBeNull();
    const body = { q: "rotation ledger", match: "any", limit: 10, explain: true };
    const halfway = await search(body);
    expect(halfway.status).toBe(200);
    const want = await exhaustiveAnswer(body);
    expect((halfway.json as { results: Hit[] }).results.map((h) => ({ path: h.path, id: h.id, score: h.score }))).toEqual(want);

    build();
    const status = wordListsStatus({ db: db(), table: "chunks_fts" });
    expect(status).toMatchObject({ status: "ready", pending: 0 });
    // rotation, ledger and the filler words are in more than 300 rows; socket (a fifth of 2600) is too.
    expect(status!.words).toBeGreaterThanOrEqual(15);
    expect(wordListsStatus({ db: db(), table: "documents_fts" })).toMatchObject({ status: "ready", pending: 0 });
    expectFts5Scores("built");
    await expectSameAnswerWithoutLists(body);
    await expectSameAnswerWithoutLists({ ...body, match: "all" });

    clearFullTextMemos();
    const listed = await search(body);
    const json = listed.json as { results: Hit[]; explain: { stages: { stage: string; detail: string }[] } };
    expect(json.explain.stages.find((s) => s.stage === "lexical")!.detail).toContain("word lists");
    expect(json.results.map((h) => ({ path: h.path, id: h.id, score: h.score }))).toEqual(want);
  });

  it("rows written after the build (added, replaced, deleted) are scored from their text until folded in, then from the lists: FTS5's answer throughout", async () => {
    build();
    const documents = Array.from({ length: 40 }, (_, k) => ({ path: `n/new-${k}.md`, content: note(DOCS + k, 1) }));
    // Replaced: the same paths with other text (their chunks rewritten).
    documents.push(...Array.from({ length: 20 }, (_, k) => ({ path: `n/${k * 7}.md`, content: note(k * 7, 2) })));
    // A row that now holds "rotation" many times over in a short text: it must come first once written.
    documents.push({ path: "n/dense.md", content: "rotation rotation rotation rotation ledger ledger" });
    await stores().putDocuments({ store: "lists", input: { documents }, actor: "test" });
    for (const k of [3, 11, 500]) await stores().deleteDocument({ store: "lists", path: `n/${k}.md`, actor: "test" });

    expect(wordListsStatus({ db: db(), table: "chunks_fts" })!.pending).toBeGreaterThan(60);
    expect(wordListsStatus({ db: db(), table: "documents_fts" })!.pending).toBeGreaterThan(60);
    expectFts5Scores("logged changes not folded in");
    const body = { q: "rotation ledger", match: "any", limit: 10, explain: true };
    const want = await exhaustiveAnswer(body);
    expect(want[0].path).toBe("n/dense.md");
    clearFullTextMemos();
    expect(((await search(body)).json as { results: Hit[] }).results.map((h) => ({ path: h.path, id: h.id, score: h.score }))).toEqual(want);

    build();
    expect(wordListsStatus({ db: db(), table: "chunks_fts" })!.pending).toBe(0);
    expect(wordListsStatus({ db: db(), table: "documents_fts" })!.pending).toBe(0);
    expect(db().prepare("select count(*) from fts_changes").pluck().get()).toBe(0);
    expectFts5Scores("folded in");
    await expectSameAnswerWithoutLists(body);
    clearFullTextMemos();
    const after = await search(body);
    const json = after.json as { results: Hit[]; explain: { stages: { stage: string; detail: string }[] } };
    expect(json.explain.stages.find((s) => s.stage === "lexical")!.detail).toContain("word lists");
    expect(json.results.map((h) => ({ path: h.path, id: h.id, score: h.score }))).toEqual(want);
  });

  it("a word in fewer rows than the lists keep is read from FTS5's own instances, and a phrase of two tokens is left to FTS5", async () => {
    const documents = Array.from({ length: 5 }, (_, k) => ({ path: `n/rare-${k}.md`, content: `zephyr ${"rotation ".repeat(k + 1)}` }));
    await stores().putDocuments({ store: "lists", input: { documents }, actor: "test" });
    build();
    expect(db().prepare("select count(*) from fts_word_list_tokens where token = 'zephyr'").pluck().get()).toBe(0);
    const match = '"zephyr" OR "rotation"';
    for (const table of TABLES) expect(listScores(match, table), table).toEqual(fts5Scores(match, table));
    expect(listScores('"rotation ledger" OR "socket"')).toBeNull();
  });

  it("a document-grouped query asked again is ranked from the scores its first sight kept (the whole-document leg asks for its candidates only), and the kept scores stay within their bounds", async () => {
    build();
    clearFullTextMemos();
    const body = { mode: "fts", q: "rotation ledger", match: "any", group: "document", limit: 10 };
    const ask = async () => (await searchStore({ handle: openStore({ store: "lists" }), core: null, input: searchInputSchema.parse(body) })).results.map((h) => ({ path: h.path, score: h.score }));
    const first = await ask();
    expect(first).toHaveLength(10);
    // The documents' lists emptied behind the index's back (no write FTS5 sees): only scores kept from the first sight
    // can still give the first answer.
    db().prepare("delete from fts_word_lists where tbl = 'documents_fts'").run();
    try {
      expect(await ask()).toEqual(first);
    } finally {
      dropWordLists({ db: db(), table: "documents_fts" });
      build();
      clearFullTextMemos();
    }
    expect(await ask()).toEqual(first);

    // Bounded by entries (their keys are request text) and by bytes, whatever the expressions.
    for (let i = 0; i < SCORE_MEMO_ENTRIES + 20; i++) expect(listScores(distinctBroad(i))).not.toBeNull();
    expect(wordListMemoSize().entries).toBe(SCORE_MEMO_ENTRIES);
    expect(wordListMemoSize().bytes).toBeLessThanOrEqual(SCORE_MEMO_BYTES);
  });

  it("an expression's candidates asked for again and again (other rows each time) get FTS5's scores every time, whether computed or picked from the whole answer the first sight kept, for any word and every word; the whole answer asked for after them is FTS5's too", () => {
    build();
    const table = "documents_fts";
    const texts = LISTED_TABLES.find((t) => t.table === table)!.texts?.(db());
    const rowids = db().prepare(`select id from ${table}_docsize order by id`).pluck().all() as number[];
    for (const match of EXPRESSIONS) {
      clearFullTextMemos();
      const want = fts5Scores(match, table);
      for (let sight = 0; sight < 4; sight++) {
        // Rows it matches and rows it does not (for every word: rows holding one of the two), and one not in the table.
        const only = [...rowids.filter((_, i) => i % 5 === sight), rowids[rowids.length - 1] + 1000];
        const got = wordListScores({ db: db(), schema: "main", table, match, texts, only });
        const picked = only.filter((id) => want.has(id)).sort((a, b) => a - b);
        expect(picked.length, match).toBeGreaterThan(0);
        expect(got && new Map(Array.from(got.ids, (id, i) => [id, got.scores[i]])), `${match}, sight ${sight + 1}`).toEqual(new Map(picked.map((id) => [id, want.get(id)!])));
      }
      expect(listScores(match, table), match).toEqual(want);
    }
  });

  it("a broad query asked again is answered from its kept ranking, even when the scores behind it were let go; a write is never answered from it; the kept rankings stay within their bounds", async () => {
    build();
    clearFullTextMemos();
    const body = { mode: "fts", q: "rotation ledger", match: "any", group: "chunk", limit: 10 };
    const ask = async () => (await searchStore({ handle: openStore({ store: "lists" }), core: null, input: searchInputSchema.parse(body) })).results.map((h) => ({ path: h.path, id: h.id, score: h.score }));
    const first = await ask();
    expect(first).toHaveLength(10);
    // The scores memo emptied (at 100k rows it holds a few dozen expressions) and the lists emptied behind the index's back.
    clearWordListMemos();
    db().prepare("delete from fts_word_lists where tbl = 'chunks_fts'").run();
    try {
      expect(await ask()).toEqual(first);
    } finally {
      dropWordLists({ db: db(), table: "chunks_fts" });
      build();
      clearFullTextMemos();
    }
    expect(await ask()).toEqual(first);
    // A committed write changes the index's state: the next answer is FTS5's new one, not the kept one.
    await stores().putDocuments({ store: "lists", input: { documents: [{ path: "n/denser.md", content: "rotation rotation rotation rotation rotation ledger ledger ledger" }] }, actor: "test" });
    const now = await ask();
    expect(now[0].path).toBe("n/denser.md");
    expect(now).toEqual(await exhaustiveAnswer(body));

    for (let i = 0; i < RANKED_MEMO_ENTRIES + 20; i++) expect(broadTopByBm25({ db: db(), schema: "main", table: "chunks_fts", match: distinctBroad(i) })?.top(10)).toHaveLength(10);
    expect(rankedMemoSize().entries).toBeLessThanOrEqual(RANKED_MEMO_ENTRIES);
    expect(rankedMemoSize().bytes).toBeLessThanOrEqual(RANKED_MEMO_BYTES);
  }, 600_000);

  it("a build whose reads are declined past 100 rows goes on in smaller steps, and one that starts over clears what a raced step left behind", () => {
    const texts = LISTED_TABLES.find((t) => t.table === "documents_fts")!.texts!(db());
    const small = (ids: number[]) => (ids.length > 100 ? null : texts(ids));
    dropWordLists({ db: db(), table: "documents_fts" });
    // What a step that raced a drop could leave: entries and lengths with no lists around them.
    db().prepare("insert into fts_word_lists(tbl, token, segment, entries) values ('documents_fts', 'rotation', 0, x'0101')").run();
    db().prepare("insert into fts_row_lengths(tbl, segment, lengths) values ('documents_fts', 0, x'0163')").run();
    const steps = buildWordLists({ db: db(), table: "documents_fts", texts: small, minRows: 300, minTableRows: 1 });
    expect(steps).toBeGreaterThan(DOCS / 100);
    for (const match of EXPRESSIONS) expect(listScores(match, "documents_fts"), match).toEqual(fts5Scores(match, "documents_fts"));
  });

  it("a row whose text no longer gives what FTS5 indexed is a misfit: the lists step aside for that table, without folding it again and again, until it is written again", async () => {
    build();
    const doc = db().prepare("select doc_id as id, content from documents where path = 'n/42.md'").get() as { id: number; content: string };
    // The stored text changes without the index (as a stale rebuild from chunks would): two words of the body become
    // one, in the same bytes. Only its log entry says so.
    const at = doc.content.indexOf(" ", doc.content.indexOf("\n\n") + 2);
    db().prepare("update documents set content = ? where doc_id = ?").run(`${doc.content.slice(0, at)}x${doc.content.slice(at + 1)}`, doc.id);
    db().prepare("insert into fts_changes(tbl, rid) values ('documents_fts', ?)").run(doc.id);
    build();
    expect(db().prepare("select rid from fts_word_list_misfits where tbl = 'documents_fts'").pluck().all()).toEqual([doc.id]);
    expect(wordListsStep({ db: db(), table: "documents_fts", texts: LISTED_TABLES[1].texts!(db()), minRows: 300, minTableRows: 1 })).toBe("idle");
    expect(db().prepare("select count(*) from fts_changes").pluck().get()).toBe(0);
    expect(listScores('"rotation" OR "ledger"', "documents_fts")).toBeNull();
    expect(listScores('"rotation" OR "ledger"', "chunks_fts")).toEqual(fts5Scores('"rotation" OR "ledger"'));
    // Written again through ingest: it fits, and the lists answer for the table again, exactly.
    await stores().putDocuments({ store: "lists", input: { documents: [{ path: "n/42.md", content: note(42, 3) }] }, actor: "test" });
    build();
    expect(db().prepare("select count(*) from fts_word_list_misfits").pluck().get()).toBe(0);
    expectFts5Scores("misfit written again");
  });

  it("temp vocabulary tables made inside a transaction that rolls back are made again, not trusted (a budget interrupt on a query's first sight)", () => {
    build();
    const reader = new Database(openStore({ store: "lists" }).file, { readonly: true });
    try {
      expect(() =>
        reader.transaction(() => {
          expect(vocabTables({ db: reader, schema: "main", table: "documents_fts" })).not.toBeNull();
          throw new Error("interrupted");
        })(),
      ).toThrow("interrupted");
      const match = '"zephyr" OR "rotation"';
      const got = wordListScores({ db: reader, schema: "main", table: "documents_fts", match });
      expect(got && new Map(Array.from(got.ids, (id, i) => [id, got.scores[i]]))).toEqual(fts5Scores(match, "documents_fts"));
    } finally {
      reader.close();
    }
  });

  it("the server's upkeep builds both tables' lists from DUALMIND_WORD_LISTS_MIN_ROWS rows, folds writes in, and drops them when set to 0", async () => {
    const setMinRows = (n: string) => {
      process.env.DUALMIND_WORD_LISTS_MIN_ROWS = n;
      resetConfigForTests();
    };
    try {
      for (const table of TABLES) dropWordLists({ db: db(), table });
      setMinRows("100000");
      expect(wordListUpkeepTurn()).toBe(false);
      for (const table of TABLES) expect(wordListsStatus({ db: db(), table })).toBeNull();

      setMinRows("1000");
      let turns = 0;
      while (wordListUpkeepTurn()) turns++;
      expect(turns).toBeGreaterThan(1);
      for (const table of TABLES) expect(wordListsStatus({ db: db(), table })).toMatchObject({ status: "ready", pending: 0 });
      await stores().putDocuments({ store: "lists", input: { documents: [{ path: "n/upkeep.md", content: note(9, 4) }] }, actor: "test" });
      expect(wordListsStatus({ db: db(), table: "chunks_fts" })!.pending).toBeGreaterThan(0);
      while (wordListUpkeepTurn()) turns++;
      for (const table of TABLES) expect(wordListsStatus({ db: db(), table })).toMatchObject({ status: "ready", pending: 0 });
      // Words in more than 2000 of the rows (the server's own threshold) have lists; the answers are FTS5's.
      for (const table of TABLES) expect(listScores('"rotation" OR "ledger"', table)).toEqual(fts5Scores('"rotation" OR "ledger"', table));
      clearFullTextMemos();
      const json = (await search({ q: "rotation ledger", match: "any", limit: 10, explain: true })).json as { explain: { stages: { stage: string; detail: string }[] } };
      expect(json.explain.stages.find((s) => s.stage === "lexical")!.detail).toContain("word lists");

      setMinRows("0");
      wordListUpkeepTurn();
      for (const table of TABLES) expect(wordListsStatus({ db: db(), table })).toBeNull();
      expect(db().prepare("select count(*) from fts_word_lists").pluck().get()).toBe(0);
    } finally {
      delete process.env.DUALMIND_WORD_LISTS_MIN_ROWS;
      resetConfigForTests();
    }
  });

  it("inside a caller's transaction the lists step aside (FTS5's totals and structure record change only on commit), and nothing of it is served after a rollback", () => {
    build();
    const match = '"rotation" OR "ledger"';
    const before = fts5Scores(match);
    const id = db().prepare("select min(id) from chunks").pluck().get() as number;
    expect(() =>
      db().transaction(() => {
        db().prepare("update chunks set text = 'rotation rotation rotation ledger' where id = ?").run(id);
        expect(fts5Scores(match).get(id)).not.toBe(before.get(id));
        expect(listScores(match)).toBeNull();
        throw new Error("rolled back");
      })(),
    ).toThrow("rolled back");
    expect(listScores(match)).toEqual(before);
  });

  it("remember's thoughts and nodes get lists too: written through the graph and by SQL (insert, update, delete), every row's score is FTS5's before and after the writes are folded in", async () => {
    const words = ["rotation", "ledger", "socket", "alpha", "bravo", "charlie"];
    for (let i = 0; i < 240; i++) {
      const pick = (k: number) => words[(i * (k + 3) + k) % words.length];
      await seedThought("lists", { content: `${pick(0)} ${pick(1)} ${pick(2)} ${i % 7 === 0 ? "rotation rotation" : pick(3)} note ${i}` });
    }
    db().exec("insert into kg_node(id, name, display_name, entity_type, created_at, updated_at, created_by, embed_hash) select 'n' || seq, 'rotation ' || content, 'ledger', 'concept', 0, 0, 'test', '' from thoughts where seq % 2 = 0");
    const graphTables = LISTED_TABLES.filter((t) => t.table === "thoughts_fts" || t.table === "kg_node_fts");
    for (const { table, texts } of graphTables) buildWordLists({ db: db(), table, texts: texts?.(db()), minRows: 30, minTableRows: 1 });
    const expressions = ['"rotation" OR "ledger"', '"rotation" "socket"', '"alpha" OR "bravo" OR "note"'];
    const expectExact = (when: string) => {
      for (const { table } of graphTables) for (const match of expressions) expect(listScores(match, table), `${table} ${match} (${when})`).toEqual(fts5Scores(match, table));
    };
    for (const { table } of graphTables) expect(wordListsStatus({ db: db(), table })).toMatchObject({ status: "ready", pending: 0 });
    expectExact("built");
    await seedThought("lists", { content: "rotation rotation ledger socket" });
    db().exec("update thoughts set content = 'ledger socket socket' where seq = (select min(seq) from thoughts)");
    db().exec("delete from thoughts where seq = (select max(seq) from thoughts where content like '%bravo%')");
    db().exec("update kg_node set display_name = 'socket socket' where seq = (select min(seq) from kg_node)");
    expect(wordListsStatus({ db: db(), table: "thoughts_fts" })!.pending).toBeGreaterThan(0);
    expect(wordListsStatus({ db: db(), table: "kg_node_fts" })!.pending).toBeGreaterThan(0);
    expectExact("written, not folded in");
    for (const { table, texts } of graphTables) buildWordLists({ db: db(), table, texts: texts?.(db()), minRows: 30, minTableRows: 1 });
    for (const { table } of graphTables) expect(wordListsStatus({ db: db(), table })).toMatchObject({ status: "ready", pending: 0 });
    expectExact("folded in");
  });
});
