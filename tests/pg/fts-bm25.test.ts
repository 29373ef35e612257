import { pgEngine, SQLITE_ENGINE } from "@/lib/db/engine";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { rowsOf, withStoreTx, type PgStoreHandle } from "@/lib/db/pg-store";
import { backfillChunkTermsPg, bm25TopPg, chunkTermsOf, rowTermsOf } from "@/lib/index/engines/pg-fulltext";
import { backfillDocumentTermsPg, DOCUMENT_WORDS, documentWordValues } from "@/lib/index/engines/pg-words";
import { putDocumentsSchema } from "@/lib/index/ingest";
import { runWithinBudgetPg, startQueryBudget } from "@/lib/db/query-budget";
import { verifyStorePg } from "@/lib/stores/engines/pg";
import { searchInputSchema, type SearchResult } from "@/lib/index/search";
import { bm25Part, ftsIdf } from "@/lib/retrieval/fts5-bm25";
import { scratchTable } from "@/lib/retrieval/fts-tokens";
import { storesOn, type StoresBackend } from "@/lib/stores/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

/**
 * PostgreSQL's full-text ranking is SQLite's: the same content and queries
 * give the same top 10 chunks with the same scores (FTS5's bm25, computed
 * on PostgreSQL from statistics kept at write time), the statistics stay
 * exact through updates and deletes, the impact-ordered top-k equals an
 * exhaustive ranking, and a store from before the statistics is backfilled.
 */

const WORDS = (
  "proxy proxies configure configured configuring configuration timeout timeouts route routes routing running runs runner cache cached caching " +
  "server servers request requests connection connections pool pooling size sized export string strings module modules value values the of and to"
).split(" ");

/** Deterministic notes: words drawn with a skewed distribution (common words in most notes, rare ones in few). */
function notes(count: number, seed = 7): { path: string; content: string }[] {
  let x = seed;
  const next = () => ((x = (x * 1103515245 + 12345) % 2 ** 31), x / 2 ** 31);
  return Array.from({ length: count }, (_, i) => {
    const len = 8 + Math.floor(next() * 60);
    const text = Array.from({ length: len }, () => WORDS[Math.floor(next() ** 2 * WORDS.length)]).join(" ");
    return { path: `notes/n${String(i).padStart(4, "0")}.md`, content: `# Note ${i}\n\n${text}.\n` };
  });
}

const QUERIES: { q: string; match?: "all" | "any" }[] = [
  { q: "proxy timeout" },
  { q: "configure routes" },
  { q: "running caches" },
  { q: "export string" },
  { q: "connection pool size", match: "any" },
  { q: "the of" },
  { q: "servers request", match: "any" },
  { q: "sized runner" },
  { q: "nothingmatches proxy", match: "any" },
  // A word in every note (its title): ties broken by id, an idf at FTS5's floor.
  { q: "note" },
  { q: "note timeout", match: "any" },
  // Stop-like words alone (in most notes, near the idf floor), and a word said twice (its part counted twice).
  { q: "the" },
  { q: "the of and to", match: "any" },
  { q: "proxy proxy timeout" },
  { q: "note the string", match: "any" },
];

let pg: PgHandle;
let lite: StoresBackend;
let post: StoresBackend;
let handle: PgStoreHandle;
let cleanup: () => void;
beforeAll(async () => {
  cleanup = useTempDataDir({ DUALMIND_DISABLE_VECTORS: "true" }).cleanup;
  pg = await openPgHandle({ url: await createTestDatabase(), max: 4 });
  lite = storesOn(SQLITE_ENGINE);
  post = storesOn(pgEngine(pg));
  for (const b of [lite, post]) {
    await b.createStore({ input: { name: "kb" }, actor: "test" });
    await b.putDocuments({ store: "kb", input: putDocumentsSchema.parse({ documents: notes(400) }), actor: "test" });
  }
  handle = await openStorePg({ pg, store: "kb" });
});
afterAll(async () => {
  await closePgHandle(pg);
  cleanup();
});

const top10 = (r: SearchResult) => r.results.map((h) => `${h.path}#${h.chunk_index} ${h.score.toFixed(4)}`);
const search = (b: StoresBackend, q: (typeof QUERIES)[number], group: "chunk" | "document" = "chunk") =>
  b.search({ store: "kb", input: searchInputSchema.parse({ q: q.q, match: q.match, mode: "fts", group, limit: 10 }) });

/**
 * The same top 10 chunks, and (`groups` with document: chunk evidence with whole-document bm25) the same top 10
 * documents, with the same scores. SQLite's whole-document index (documents_fts, contentless_delete) keeps counting a
 * replaced or deleted row in its totals, so its whole-document idf drifts from its content once rows change: documents
 * are compared on content written once.
 */
async function expectSameRanking(groups: ("chunk" | "document")[] = ["chunk"]): Promise<void> {
  for (const group of groups) {
    for (const q of QUERIES) {
      const [a, b] = [await search(lite, q, group), await search(post, q, group)];
      expect({ q: q.q, group, top: top10(b) }).toEqual({ q: q.q, group, top: top10(a) });
    }
  }
}

const byte = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** The statistics as stored, or recomputed from the chunks' texts. */
async function statistics(from: "stored" | "recomputed") {
  return withStoreTx({ handle, readOnly: true, work: async (tx) => {
    if (from === "stored") {
      const [totals] = await rowsOf<{ rows: string; tokens: string }>({ tx, query: sql`select rows, tokens from fts_totals` });
      const terms = await rowsOf<{ t: string }>({ tx, query: sql`select term || ':' || rows as t from fts_terms where rows > 0` });
      const postings = await rowsOf<{ p: string }>({ tx, query: sql`select chunk_id || ':' || term || ':' || tf || ':' || len as p from fts_postings` });
      const lens = await rowsOf<{ l: string }>({ tx, query: sql`select id || ':' || fts_len as l from chunks` });
      const [docTotals] = await rowsOf<{ rows: string; tokens: string }>({ tx, query: sql`select rows, tokens from word_totals where tbl = 'documents'` });
      const docTerms = await rowsOf<{ t: string }>({ tx, query: sql`select term || ':' || rows as t from word_terms where tbl = 'documents' and rows > 0` });
      const docPostings = await rowsOf<{ p: string }>({ tx, query: sql`select d.path || ':' || p.term || ':' || p.tf || ':' || p.len || ':' || d.fts_len as p from word_postings p join documents d on d.doc_id = p.rid where p.tbl = 'documents'` });
      return {
        documents: { rows: Number(docTotals.rows), tokens: Number(docTotals.tokens), terms: docTerms.map((t) => t.t).sort(byte), postings: docPostings.map((p) => p.p).sort(byte) }, rows: Number(totals.rows), tokens: Number(totals.tokens), terms: terms.map((t) => t.t).sort(byte), postings: postings.map((p) => p.p).sort(byte), lens: lens.map((l) => l.l).sort(byte) };
    }
    const chunks = await rowsOf<{ id: string; text: string }>({ tx, query: sql`select id, text from chunks` });
    const made = chunkTermsOf(chunks.map((c) => c.text));
    const docs = await rowsOf<{ path: string; kind: string; content: string }>({ tx, query: sql`select path, kind, content from documents` });
    const docMade = rowTermsOf({ tokenize: DOCUMENT_WORDS.tokenize, columns: DOCUMENT_WORDS.columns, rows: docs.map((d) => documentWordValues({ path: d.path, kind: d.kind, text: d.content })) });
    const docDf = new Map<string, number>();
    const docPostings: string[] = [];
    docMade.forEach((m, i) => {
      for (const [t, n] of m.tf) {
        docDf.set(t, (docDf.get(t) ?? 0) + 1);
        docPostings.push(`${docs[i].path}:${t}:${n}:${m.len}:${m.len}`);
      }
    });
    const df = new Map<string, number>();
    const postings: string[] = [];
    made.forEach((m, i) => {
      for (const [t, n] of m.tf) {
        df.set(t, (df.get(t) ?? 0) + 1);
        postings.push(`${chunks[i].id}:${t}:${n}:${m.len}`);
      }
    });
    return {
      documents: { rows: docs.length, tokens: docMade.reduce((s, m) => s + m.len, 0), terms: [...docDf].map(([t, n]) => `${t}:${n}`).sort(byte), postings: docPostings.sort(byte) },
      rows: chunks.length,
      tokens: made.reduce((s, m) => s + m.len, 0),
      terms: [...df].map(([t, n]) => `${t}:${n}`).sort(byte),
      postings: postings.sort(byte),
      lens: chunks.map((c, i) => `${c.id}:${made[i].len}`).sort(byte),
    };
  } });
}

describe("PostgreSQL full-text ranks as SQLite's bm25", () => {
  it("gives the same top 10 chunks, and grouped the same top 10 documents, with the same scores (4 decimals) as SQLite for the same content and queries", async () => {
    await expectSameRanking(["chunk", "document"]);
    const r = await post.search({ store: "kb", input: searchInputSchema.parse({ q: "proxy timeout", mode: "fts", group: "chunk", explain: true }) });
    expect(r.explain?.stages.find((s) => s.stage === "lexical")?.detail).toMatch(/exact bm25/);
  });

  it("keeps the statistics exact through updates and deletes (a recomputation from the texts agrees), and the ranking with them", async () => {
    const changed = notes(120, 99).map((n, i) => ({ path: `notes/n${String(i * 3).padStart(4, "0")}.md`, content: n.content }));
    for (const b of [lite, post]) {
      await b.putDocuments({ store: "kb", input: putDocumentsSchema.parse({ documents: changed }), actor: "test" });
      for (let i = 1; i < 60; i += 7) await b.deleteDocument({ store: "kb", path: `notes/n${String(i).padStart(4, "0")}.md`, actor: "test" });
    }
    expect(await statistics("stored")).toEqual(await statistics("recomputed"));
    await expectSameRanking();
  });

  it("ranks a broad query's top k by impact-ordered postings, and all words by their postings joined or looked up by key, exactly as scoring every match does", async () => {
    const recomputed = await withStoreTx({ handle, readOnly: true, work: async (tx) => {
      const chunks = await rowsOf<{ id: string; text: string }>({ tx, query: sql`select id, text from chunks` });
      return chunks.map((c, i) => ({ id: Number(c.id), ...chunkTermsOf([c.text])[0], i }));
    } });
    const { db } = scratchTable({ tokenize: "porter unicode61 remove_diacritics 2", columns: 1 });
    const rows = recomputed.length;
    const avgdl = recomputed.reduce((s, c) => s + c.len, 0) / rows;
    // Which ways the bounded reads answered: some rows met in one head only were scored by key.
    const plans: string[] = [];
    let joinedQueries = 0;
    for (const [words, mode] of [
      [["the", "of"], "any"],
      [["proxy", "string"], "all"],
      [["values", "timeout", "and"], "any"],
      // In every row (many equal scores: ties by id), alone and beside a rarer word.
      [["note"], "any"],
      [["note", "timeout"], "all"],
      [["note", "proxy", "the"], "any"],
      // Stop-like words in most rows, all of them; a word said twice.
      [["the", "and"], "all"],
      [["proxy", "proxy", "timeout"], "all"],
    ] as const) {
      const tokens = chunkTermsOf(words as unknown as string[]).map((t) => [...t.tf.keys()][0]);
      const idf = tokens.map((t) => ftsIdf(db, rows, recomputed.filter((c) => c.tf.has(t)).length));
      const exhaustive = recomputed
        .filter((c) => (mode === "all" ? tokens.every((t) => c.tf.has(t)) : tokens.some((t) => c.tf.has(t))))
        .map((c) => ({ id: c.id, score: tokens.reduce((s, t, p) => s + bm25Part(idf[p], c.tf.get(t) ?? 0, c.len, avgdl), 0) }))
        .sort((a, b) => b.score - a.score || a.id - b.id)
        .slice(0, 10);
      // (All words: their best postings sampled first, found together enough for the heads.)
      const top = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [], k: 10, exhaustiveUpTo: 0, joinUpTo: 0, lookupCost: Infinity, together: 0 }) });
      expect(top.kind).toBe("ranked");
      if (top.kind !== "ranked") continue;
      expect(top.plan.path).toBe("impact-ordered");
      expect(top.hits).toEqual(exhaustive);
      // Heads far shorter than the postings: the bound proves the answer after a few deeper tries, still exact.
      for (const firstHeads of [1, 3, 16]) {
        const deep = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [], k: 10, exhaustiveUpTo: 0, joinUpTo: 0, lookupCost: Infinity, joinCommon: 0, firstHeads }) });
        expect(deep.kind === "ranked" && deep.hits).toEqual(exhaustive);
        if (deep.kind === "ranked") plans.push(deep.plan.detail);
        // With a filter that drops most rows: the best 5 that pass, as exhaustive scoring finds them.
        const folder = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [sql`substr(d.path, 1, 10) = 'notes/n000'`], k: 5, exhaustiveUpTo: 0, joinUpTo: 0, lookupCost: Infinity, joinCommon: 0, firstHeads }) });
        const folderAll = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [sql`substr(d.path, 1, 10) = 'notes/n000'`], k: 5, exhaustiveUpTo: 1e9 }) });
        expect(folder.kind === "ranked" && folder.hits).toEqual(folderAll.kind === "ranked" && folderAll.hits);
      }
      // All words: every word's postings joined on the chunk, only the rows holding them all scored; the same bits.
      if (mode === "all" && new Set(tokens).size > 1) {
        const joined = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [], k: 10, exhaustiveUpTo: 0, joinUpTo: 1e9, lookupCost: Infinity }) });
        expect(joined.kind === "ranked" && joined.plan.path).toBe("joined");
        expect(joined.kind === "ranked" && joined.hits).toEqual(exhaustive);
        const folder = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [sql`substr(d.path, 1, 10) = 'notes/n000'`], k: 5, exhaustiveUpTo: 0, joinUpTo: 1e9, lookupCost: Infinity }) });
        const folderAll = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [sql`substr(d.path, 1, 10) = 'notes/n000'`], k: 5, exhaustiveUpTo: 1e9 }) });
        expect(folder.kind === "ranked" && folder.hits).toEqual(folderAll.kind === "ranked" && folderAll.hits);
        joinedQueries++;
        // The rarest word's rows each joined to the other words' postings by key: the same bits, filtered or not.
        const byKey = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [], k: 10, exhaustiveUpTo: 0, joinUpTo: 0, lookupCost: 0 }) });
        expect(byKey.kind === "ranked" && byKey.plan.path).toBe("by-key");
        expect(byKey.kind === "ranked" && byKey.hits).toEqual(exhaustive);
        const folderByKey = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [sql`substr(d.path, 1, 10) = 'notes/n000'`], k: 5, exhaustiveUpTo: 0, joinUpTo: 0, lookupCost: 0 }) });
        expect(folderByKey.kind === "ranked" && folderByKey.hits).toEqual(folderAll.kind === "ranked" && folderAll.hits);
        // Words too seldom together at the head of their postings for the heads: joined, the same bits.
        const afterHeads = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [], k: 10, exhaustiveUpTo: 0, joinUpTo: 0, lookupCost: Infinity, together: 2 }) });
        expect(afterHeads.kind === "ranked" && afterHeads.plan.path).toBe("joined");
        expect(afterHeads.kind === "ranked" && afterHeads.hits).toEqual(exhaustive);
      }
      // Scored in the statement (every match): the same bits.
      const scored = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [], k: 10, exhaustiveUpTo: 1e9 }) });
      expect(scored.kind === "ranked" && scored.plan.path).toBe("exhaustive");
      expect(scored.kind === "ranked" && scored.hits).toEqual(exhaustive);
      // A filter that drops most of the best: read deeper until k pass.
      const few = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [sql`substr(d.path, 1, 10) = 'notes/n000'`], k: 5, exhaustiveUpTo: 1e9 }) });
      const inFolder = await withStoreTx({ handle, readOnly: true, work: (tx) => rowsOf<{ id: string }>({ tx, query: sql`select c.id from chunks c join documents d on d.doc_id = c.doc_id where substr(d.path, 1, 10) = 'notes/n000'` }) });
      const kept = new Set(inFolder.map((r) => Number(r.id)));
      const all = await withStoreTx({ handle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: [...words], mode, where: [], k: 100_000, exhaustiveUpTo: 1e9 }) });
      expect(few.kind === "ranked" && few.hits).toEqual(all.kind === "ranked" && all.hits.filter((h) => kept.has(h.id)).slice(0, 5));
    }
    expect(plans.some((p) => /more by key/.test(p))).toBe(true);
    expect(joinedQueries).toBe(4);
  });

  it("answers all of 32 words, each in every note, with the exhaustive top 10 within the default query budget: the together sample looks at the rarest 3 only", async () => {
    // 32 words in every note (1 to 3 times each, notes of different lengths), so every sampled posting holds every other word.
    const long = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basalt cobalt dune ember fjord".split(" ");
    const documents = Array.from({ length: 300 }, (_, i) => ({
      path: `long/n${String(i).padStart(3, "0")}.md`,
      content: `${long.map((w, j) => Array<string>(1 + ((i * 7 + j * 3) % 3)).fill(w).join(" ")).join(" ")} ${Array<string>(i % 40).fill("filler").join(" ")}\n`,
    }));
    await post.createStore({ input: { name: "long" }, actor: "test" });
    await post.putDocuments({ store: "long", input: putDocumentsSchema.parse({ documents }), actor: "test" });
    const longHandle = await openStorePg({ pg, store: "long" });
    // The store is small: the exhaustive, joined and by-key paths are put out of reach, so the sample runs as on a large one.
    const sampled = await withStoreTx({ handle: longHandle, readOnly: true, work: (tx) =>
      runWithinBudgetPg({ tx, budget: startQueryBudget({ hint: "test" }), fn: () => bm25TopPg({ tx, words: long, mode: "all", where: [], k: 10, exhaustiveUpTo: 0, joinUpTo: 0, lookupCost: Infinity }) }),
    });
    const exhaustive = await withStoreTx({ handle: longHandle, readOnly: true, work: (tx) => bm25TopPg({ tx, words: long, mode: "all", where: [], k: 10, exhaustiveUpTo: 1e9 }) });
    expect(exhaustive.kind === "ranked" && exhaustive.hits.length).toBe(10);
    expect(sampled.kind === "ranked" && sampled.hits).toEqual(exhaustive.kind === "ranked" && exhaustive.hits);
    expect(sampled.kind === "ranked" && sampled.plan.detail).toMatch(/the 3 rarest words' first 200 postings often together/);
  });

  it("backfills a store from before the statistics (resumable, a batch per transaction), answering by ts_rank meanwhile", async () => {
    const before = await statistics("stored");
    await withStoreTx({ handle, work: (tx) =>
      tx.execute(
        sql`update chunks set fts_len = null; delete from fts_postings; delete from fts_terms; update fts_totals set rows = 0, tokens = 0;
          update documents set fts_len = null; delete from word_postings; delete from word_terms; update word_totals set rows = 0, tokens = 0`,
      ),
    });
    const r = await post.search({ store: "kb", input: searchInputSchema.parse({ q: "proxy timeout", mode: "fts", group: "chunk", explain: true }) });
    expect(r.results.length).toBeGreaterThan(0);
    expect(r.explain?.stages.find((s) => s.stage === "lexical")?.detail).toMatch(/being built/);
    // verify counts the chunks still waiting for their statistics.
    expect((await verifyStorePg({ handle })).fts_missing).toBeGreaterThan(0);
    // group=document answers meanwhile too (its whole-document leg by ts_rank), and starts that backfill.
    const grouped = await post.search({ store: "kb", input: searchInputSchema.parse({ q: "proxy timeout", mode: "fts", group: "document" }) });
    expect(grouped.results.length).toBeGreaterThan(0);
    // The search started the backfill in the background; run it to the end here too (batches of 50: resumable).
    await backfillChunkTermsPg({ handle, batch: 50 });
    await backfillDocumentTermsPg({ handle, batch: 50 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await statistics("stored")).toEqual(before);
    expect((await verifyStorePg({ handle })).fts_missing).toBe(0);
    await expectSameRanking();
  });
});
