import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { LISTED_TABLES } from "@/lib/index/word-list-upkeep";
import { broadTopByBm25, buildFtsMatch, clearFullTextMemos } from "@/lib/retrieval";
import { buildWordLists, wordListsStatus } from "@/lib/retrieval/word-lists";
import { stores } from "@/lib/stores/backend";
import { openStore } from "@/lib/stores/stores";
import { loadTextWindows, notesBetween } from "@/bench/corpus";
import { fullTextQueriesOf } from "@/bench/fts-queries";
import { onPg, seedStore, useTestBackend, type TestEnv } from "./backend";

/**
 * Real text nobody here wrote (node_modules markdown, bench/corpus.ts), a
 * few hundred queries from its own vocabulary (common words paired, rare
 * beside common, three and four words, hyphenated words, advanced syntax),
 * through the chunk search and the route's default grouping: the answers
 * read from the word lists are FTS5's own, ids and scores (to the last bit),
 * on every call. The reference is the same search inside an open
 * transaction on the store's connection, where the lists step aside and
 * FTS5 ranks every match. bench/fts-same-answers.ts compares two versions
 * of the code the same way on a larger store.
 */
const NOTES = 3000;
let env: TestEnv;
let queries: { q: string; syntax: "plain" | "fts5" }[] = [];

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_EMBED_WORKER: "false", DUALMIND_QUERY_BUDGET_MS: "60000" });
  if (onPg) return;
  await seedStore("same");
  const windows = loadTextWindows(60_000);
  for (let from = 0; from < NOTES; from += 500) {
    await stores().putDocuments({ store: "same", input: { documents: notesBetween({ windows, from, to: Math.min(NOTES, from + 500) }).map((n) => ({ path: n.path, content: n.text })) }, actor: "test" });
  }
  const db = getStoreDb({ store: "same" }).sqlite;
  for (const { table, texts } of LISTED_TABLES.filter((t) => t.table === "chunks_fts" || t.table === "documents_fts")) buildWordLists({ db, table, texts: texts?.(db), minRows: 500, minTableRows: 1 });
  queries = fullTextQueriesOf(db);
}, 300_000);
afterAll(async () => {
  await env.cleanup();
});

describe.skipIf(onPg)("the same full-text answers with and without the word lists, over real text [SQLite only: FTS5's word lists]", () => {
  it("a few hundred queries, both match modes, chunks and documents: the same ids and scores as FTS5 scoring every match", async () => {
    const handle = openStore({ store: "same" });
    expect(wordListsStatus({ db: handle.sqlite, table: "chunks_fts" })).toMatchObject({ status: "ready", pending: 0 });
    expect(queries.length).toBeGreaterThanOrEqual(150);
    // Many of them are broad (thousands of matches) and ranked from the lists.
    const listed = queries.filter(({ q, syntax }) => syntax === "plain" && broadTopByBm25({ db: handle.sqlite, schema: "main", table: "chunks_fts", match: buildFtsMatch(q, { match: "any" })! }) !== null);
    expect(listed.length).toBeGreaterThan(50);
    const answer = async (q: string, syntax: "plain" | "fts5", match: "all" | "any") => {
      // The chunk leg as FTS5 ranks it: plain bm25, without the exact-form and proximity factors.
      const chunk = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, limit: 10, match, mode: "fts", group: "chunk", syntax }), tuning: { exactFormBoost: 0, proximity: { weight: 0, window: 5 } } });
      const doc = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, limit: 10, match, mode: "fts", syntax }) });
      return { chunk: chunk.results.map((h) => [h.id, h.score]), doc: doc.results.map((h) => [h.path, h.score]) };
    };
    let broad = 0;
    for (const { q, syntax } of queries) {
      for (const match of ["all", "any"] as const) {
        handle.sqlite.exec("begin");
        let want;
        try {
          clearFullTextMemos();
          want = await answer(q, syntax, match);
        } finally {
          handle.sqlite.exec("rollback");
        }
        clearFullTextMemos();
        const first = await answer(q, syntax, match);
        const again = await answer(q, syntax, match);
        expect(first, `${q} (${match}, ${syntax})`).toEqual(want);
        expect(again, `${q} (${match}, ${syntax}), asked again`).toEqual(want);
        if (want.chunk.length === 10) broad++;
      }
    }
    // Most queries fill a page: the comparison is over real rankings, not empty answers.
    expect(broad).toBeGreaterThan(queries.length);
  }, 300_000);
});
