import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb, type StoreHandle } from "@/lib/db/connection";
import { documentFtsValues } from "@/lib/index/document-fts";
import { deleteDocumentByPath, ingestDocument } from "@/lib/index/ingest";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { bm25OfRows, buildFtsMatch } from "@/lib/retrieval";
import { phraseRowCount } from "@/lib/retrieval/fts-tokens";
import { useTempDataDir } from "./helpers";

// The whole-document leg of group=document search scores its candidate
// documents alone (bm25OfRows) instead of ranking every document the query
// matches. What a user notices: nothing, except speed — the scores are
// FTS5's own, through edits and deletes, and a page of documents is the same
// as when the whole index was ranked.

let env: ReturnType<typeof useTempDataDir>;
beforeEach(() => {
  env = useTempDataDir();
});
afterEach(() => env.cleanup());

const WORDS = "backup restore snapshot ledger harbor quartz meadow lantern copper violet summit orchard canyon ember willow granite parcel beacon thistle rotation archive offsite".split(" ");
/** A deterministic note: words drawn by a fixed step, some repeated, of varying length; some with a title naming two words. */
function note(i: number): { path: string; text: string } {
  const n = 20 + ((i * 37) % 90);
  const body = Array.from({ length: n }, (_, j) => WORDS[(i * 7 + j * j * 3 + (j % 5) * i) % WORDS.length]).join(" ");
  return { path: `notes/${["ops", "dev", "misc"][i % 3]}/n${i}.md`, text: i % 4 === 0 ? `# ${WORDS[i % WORDS.length]} and ${WORDS[(i * 3) % WORDS.length]}\n\n${body}\n` : `${body}\n` };
}

/** Every third note as a file document (its text kept only in its chunks), the rest as API documents (content stored). */
function seed(handle: StoreHandle, count: number): void {
  handle.sqlite.transaction(() => {
    for (let i = 0; i < count; i++) ingestDocument({ handle, origin: i % 3 === 2 ? "file" : "api", mtime: 0, ...note(i) });
  })();
}

/** FTS5's own bm25 of every matching document (positive, higher is better). */
function exhaustive(handle: StoreHandle, match: string): Map<number, number> {
  const rows = handle.sqlite.prepare("select rowid, bm25(documents_fts) as rank from documents_fts where documents_fts match ?").all(match) as { rowid: number; rank: number }[];
  return new Map(rows.map((r) => [r.rowid, -r.rank]));
}

const QUERIES = ["backup restore", "snapshot ledger archive", "quartz meadow lantern copper violet summit", "harbor", "rotation offsite beacon thistle"];

describe("bm25OfRows: FTS5's bm25 of given rows without ranking every match", () => {
  it("gives each listed row FTS5's own score, for any-word and all-word queries, through edits and deletes", () => {
    const handle = getStoreDb({ store: "default" });
    seed(handle, 240);
    const check = () => {
      const docIds = (handle.sqlite.prepare("select doc_id from documents order by doc_id").pluck().all() as number[]).filter((_, i) => i % 2 === 0);
      for (const q of QUERIES) {
        for (const mode of ["any", "all"] as const) {
          const match = buildFtsMatch(q, { match: mode, stopwords: "drop" })!;
          const truth = exhaustive(handle, match);
          const got = bm25OfRows({ db: handle.sqlite, schema: "main", table: "documents_fts", match, rowids: docIds })!;
          expect(got).not.toBeNull();
          const expected = docIds.filter((id) => truth.has(id));
          expect([...got.keys()].sort((a, b) => a - b)).toEqual(expected);
          for (const id of expected) expect(got.get(id)!).toBeCloseTo(truth.get(id)!, 9);
        }
      }
    };
    check();
    // Rewrite some documents and delete others: the index's numbers (row count, lengths, idf) move, and so must the scores.
    handle.sqlite.transaction(() => {
      for (let i = 0; i < 240; i += 5) ingestDocument({ handle, origin: i % 3 === 2 ? "file" : "api", mtime: 0, path: note(i).path, text: `${note(i + 1000).text} backup backup` });
    })();
    for (let i = 1; i < 240; i += 7) deleteDocumentByPath({ handle, path: note(i).path });
    check();
  });

  it("scores a broad query's rows from their own text with FTS5's numbers, for API and file documents, through edits and deletes", () => {
    const handle = getStoreDb({ store: "default" });
    seed(handle, 240);
    const texts = (docIds: number[]) => documentFtsValues({ sqlite: handle.sqlite, docIds });
    // Asked again under the same index state, the rows already read are not read again: the same scores from lookups.
    const someIds = handle.sqlite.prepare("select doc_id from documents order by doc_id").pluck().all() as number[];
    const match = buildFtsMatch("backup restore", { match: "any", stopwords: "drop" })!;
    const asked: number[][] = [];
    const counting = (ids: number[]) => (asked.push(ids), texts(ids));
    const first = bm25OfRows({ db: handle.sqlite, schema: "main", table: "documents_fts", match, rowids: someIds.slice(0, 50), maxInstances: 0, texts: counting })!;
    const again = bm25OfRows({ db: handle.sqlite, schema: "main", table: "documents_fts", match, rowids: someIds.slice(0, 60), maxInstances: 0, texts: counting })!;
    expect(asked.map((ids) => ids.length)).toEqual([50, 10]);
    for (const [id, score] of first) expect(again.get(id)).toBe(score);
    const check = () => {
      const docIds = handle.sqlite.prepare("select doc_id from documents order by doc_id").pluck().all() as number[];
      for (const q of QUERIES) {
        for (const mode of ["any", "all"] as const) {
          const match = buildFtsMatch(q, { match: mode, stopwords: "drop" })!;
          const truth = exhaustive(handle, match);
          // maxInstances 0: every query counts as broad, so the instances are never read and the texts are.
          const got = bm25OfRows({ db: handle.sqlite, schema: "main", table: "documents_fts", match, rowids: docIds, maxInstances: 0, texts });
          expect(got).not.toBeNull();
          expect([...got!.keys()].sort((a, b) => a - b)).toEqual(docIds.filter((id) => truth.has(id)));
          for (const [id, score] of got!) expect(score).toBeCloseTo(truth.get(id)!, 9);
        }
      }
    };
    check();
    handle.sqlite.transaction(() => {
      for (let i = 0; i < 240; i += 5) ingestDocument({ handle, origin: i % 3 === 2 ? "file" : "api", mtime: 0, path: note(i).path, text: `${note(i + 1000).text} backup backup` });
    })();
    for (let i = 1; i < 240; i += 7) deleteDocumentByPath({ handle, path: note(i).path });
    check();
    // Candidates larger than the byte limit are declined: the caller ranks the index's own best documents instead.
    expect(documentFtsValues({ sqlite: handle.sqlite, docIds: [1, 2, 3], maxBytes: 10 })).toBeNull();
    ingestDocument({ handle, origin: "api", mtime: 0, path: "fresh.md", text: "backup" });
    expect(bm25OfRows({ db: handle.sqlite, schema: "main", table: "documents_fts", match: '"backup"', rowids: [1, 2, 3], maxInstances: 0, texts: () => null })).toBeNull();
  });

  it("scores long file documents from their text after an edit above their later chunks, and steps aside when the text is not what was indexed", () => {
    const handle = getStoreDb({ store: "default" });
    const section = (i: number, j: number) => `## Part ${j}\n\n${Array.from({ length: 60 }, (_, w) => WORDS[(i * 5 + j * 11 + w * w) % WORDS.length]).join(" ")}\n`;
    const long = (i: number, extra = "") => `# Guide ${i}\n\n${extra}${Array.from({ length: 8 }, (_, j) => section(i, j)).join("\n")}`;
    handle.sqlite.transaction(() => {
      for (let i = 0; i < 30; i++) ingestDocument({ handle, origin: "file", mtime: 0, path: `guides/g${i}.md`, text: long(i) });
    })();
    // Lengthen the opening of some: their later chunks are kept, at new byte offsets.
    handle.sqlite.transaction(() => {
      for (let i = 0; i < 30; i += 3) ingestDocument({ handle, origin: "file", mtime: 0, path: `guides/g${i}.md`, text: long(i, "A longer opening paragraph about harbor quartz and violet meadows. ".repeat(3)) });
    })();
    const docIds = handle.sqlite.prepare("select doc_id from documents order by doc_id").pluck().all() as number[];
    expect((handle.sqlite.prepare("select count(*) from chunks where doc_id = ?").pluck().get(docIds[0]) as number)).toBeGreaterThan(2);
    const texts = (ids: number[]) => documentFtsValues({ sqlite: handle.sqlite, docIds: ids });
    for (const q of QUERIES) {
      const match = buildFtsMatch(q, { match: "any", stopwords: "drop" })!;
      const truth = exhaustive(handle, match);
      const got = bm25OfRows({ db: handle.sqlite, schema: "main", table: "documents_fts", match, rowids: docIds, maxInstances: 0, texts })!;
      expect(got).not.toBeNull();
      for (const [id, score] of got) expect(score).toBeCloseTo(truth.get(id)!, 9);
    }
    // A chunk whose recorded range is off (as stores written before ranges followed kept chunks may hold): the text
    // rebuilt from the chunks is not the indexed text, and no score is made from it.
    handle.sqlite.prepare("update chunks set start_byte = start_byte + 40, end_byte = end_byte + 40 where id = (select max(id) from chunks where doc_id = ?)").run(docIds[3]);
    // (Counts already read stay valid while the index is unchanged; any write to it makes them be read again.)
    ingestDocument({ handle, origin: "api", mtime: 0, path: "other.md", text: "harbor" });
    const match = buildFtsMatch("harbor quartz", { match: "any", stopwords: "drop" })!;
    expect(bm25OfRows({ db: handle.sqlite, schema: "main", table: "documents_fts", match, rowids: docIds, maxInstances: 0, texts })).toBeNull();
  });

  it("gives a selective query's listed rows (few rows hold its words) FTS5's own score, and no score to the rows it does not list", () => {
    const handle = getStoreDb({ store: "default" });
    seed(handle, 240);
    const rare = ["zephyr quokka", "zephyr zephyr backup", "quokka", "zephyr harbor", "quokka zephyr ember willow"];
    rare.forEach((text, i) => ingestDocument({ handle, origin: i % 2 ? "file" : "api", mtime: 0, path: `rare/r${i}.md`, text: `${note(i).text} ${text}\n` }));
    const check = () => {
      const rareIds = handle.sqlite.prepare("select doc_id from documents where path like 'rare/%' order by doc_id").pluck().all() as number[];
      // Every rare document but the last, and some others: the unlisted match must not be scored.
      const listed = [...rareIds.slice(0, -1), 1, 2, 3];
      for (const q of ["zephyr", "zephyr quokka", "zephyr backup", "quokka willow"]) {
        for (const mode of ["any", "all"] as const) {
          const match = buildFtsMatch(q, { match: mode, stopwords: "drop" })!;
          const truth = exhaustive(handle, match);
          const got = bm25OfRows({ db: handle.sqlite, schema: "main", table: "documents_fts", match, rowids: listed })!;
          expect(got).not.toBeNull();
          expect([...got.keys()].sort((a, b) => a - b)).toEqual(listed.filter((id) => truth.has(id)).sort((a, b) => a - b));
          for (const [id, score] of got) expect(score).toBe(truth.get(id)!);
        }
      }
      expect(exhaustive(handle, '"zephyr"').size).toBeGreaterThan(1);
    };
    check();
    deleteDocumentByPath({ handle, path: "rare/r0.md" });
    ingestDocument({ handle, origin: "api", mtime: 0, path: "rare/r9.md", text: "zephyr zephyr zephyr quokka\n" });
    check();
  });

  it("steps aside (null) for an advanced expression or a phrase of several words, and when the words occur too often", () => {
    const handle = getStoreDb({ store: "default" });
    seed(handle, 60);
    const args = { db: handle.sqlite, schema: "main", table: "documents_fts", rowids: [1, 2, 3] };
    expect(bm25OfRows({ ...args, match: "backup NEAR restore" })).toBeNull();
    expect(bm25OfRows({ ...args, match: '"backup restore"' })).toBeNull();
    expect(bm25OfRows({ ...args, match: '"backup" OR "restore"', maxInstances: 10 })).toBeNull();
    expect(bm25OfRows({ ...args, match: '"backup" OR "restore"' })).not.toBeNull();
  });
});

describe("group=document search with the candidate-only document leg", () => {
  it("returns the same documents in the same order, with the same scores, as ranking the whole document index", async () => {
    const handle = getStoreDb({ store: "default" });
    seed(handle, 300);
    for (const q of [...QUERIES, "backup snapshot restore rotation archive offsite ledger"]) {
      for (const mode of ["fts", "hybrid"] as const) {
        const input = searchInputSchema.parse({ q, mode, match: "any", group: "document", limit: 10 });
        const fresh = await searchStore({ handle, core: null, input, tuning: { wholeDocumentLeg: "candidates" } });
        const before = await searchStore({ handle, core: null, input, tuning: { wholeDocumentLeg: "index_top" } });
        expect(fresh.results.length).toBeGreaterThan(0);
        expect(fresh.results.map((h) => h.path)).toEqual(before.results.map((h) => h.path));
        fresh.results.forEach((h, i) => expect(h.score).toBeCloseTo(before.results[i].score, 9));
      }
    }
  });
});

describe("phraseRowCount: a word's rows from the index's vocabulary", () => {
  it("is the number of rows the phrase matches (its stem's), through edits and deletes; null for a phrase of two tokens", () => {
    const handle = getStoreDb({ store: "default" });
    seed(handle, 120);
    const count = (phrase: string) => handle.sqlite.prepare("select count(*) from chunks_fts where chunks_fts match ?").pluck().get(phrase) as number;
    const check = () => {
      for (const phrase of ['"backup"', '"rotations"', '"archived"', '"nowhere"']) expect(phraseRowCount({ db: handle.sqlite, schema: "main", table: "chunks_fts", phrase })).toBe(count(phrase));
    };
    check();
    expect(count('"rotations"')).toBeGreaterThan(0); // stemmed to "rotat", as "rotation" is
    ingestDocument({ handle, origin: "api", mtime: 0, path: "notes/new.md", text: "rotations archived nowhere\n" });
    check();
    expect(phraseRowCount({ db: handle.sqlite, schema: "main", table: "chunks_fts", phrase: '"nowhere"' })).toBe(1);
    deleteDocumentByPath({ handle, path: "notes/new.md" });
    check();
    expect(phraseRowCount({ db: handle.sqlite, schema: "main", table: "chunks_fts", phrase: '"backup restore"' })).toBeNull();
  });
});
