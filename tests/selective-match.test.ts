import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { clearSelectiveMatchCaches, matchExpression, SELECTIVE_ROWS, selectiveTopByBm25 } from "@/lib/retrieval";
import { rescoredByLastRanking } from "@/lib/retrieval/selective-match";
import { stores } from "@/lib/stores/backend";
import { onPg, searchHere, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";
import { patience } from "./fixtures/patience";

/**
 * Max-score pruning of long OR queries (lib/retrieval/selective-match.ts):
 * held to FTS5 scoring every match on the same tables — same rows, same
 * order, same scores — and it steps aside (null: the caller runs the whole
 * query) whenever the common words could matter. That pruning is SQLite's
 * (PostgreSQL ranks every match, lib/index/search-pg.ts), so those tests run
 * on SQLite only; what it must keep for a user (the rows with the rare words
 * first, rows only a common word matches still found) is checked through
 * search on both backends at the end.
 */

const ROWS = 12_000;
const COMMON = ["server", "request", "config"];
const FILLER = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"];

/** Deterministic texts: common words in most rows at varying counts, lengths varying, selective words in a few. */
function text(i: number): string {
  let x = (i + 1) * 2654435761;
  const rnd = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const words: string[] = [];
  const length = 8 + Math.floor(rnd() * 40);
  for (let w = 0; w < length; w++) words.push(rnd() < 0.2 ? COMMON[Math.floor(rnd() * COMMON.length)] : FILLER[Math.floor(rnd() * FILLER.length)]);
  if (i % 97 === 3) words.push("certificates", "renewed");
  if (i % 151 === 5) words.push("running", "kubernetes");
  if (i % 1500 === 11) words.push("zephyrine");
  return words.join(" ");
}

let dir: string;
let db: Database.Database;

beforeAll(() => {
  if (onPg) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-selective-"));
  db = new Database(path.join(dir, "index.db"));
  // The shapes of thoughts_fts (external content, one column) and kg_node_fts (three columns, some null).
  db.exec(`
    create table notes (seq integer primary key, content text not null);
    create virtual table notes_fts using fts5(content, content='notes', content_rowid='seq', tokenize='porter unicode61');
    create trigger notes_ai after insert on notes begin insert into notes_fts(rowid, content) values (new.seq, new.content); end;
    create virtual table named_fts using fts5(name, display_name, tags, tokenize='porter unicode61');
  `);
  const note = db.prepare("insert into notes(seq, content) values (?, ?)");
  const named = db.prepare("insert into named_fts(rowid, name, display_name, tags) values (?, ?, ?, ?)");
  db.transaction(() => {
    for (let i = 1; i <= ROWS; i++) {
      note.run(i, text(i));
      const t = text(i + ROWS).split(" ");
      named.run(i, t.slice(-4).join(" "), i % 3 ? t.slice(0, 7).join(" ") : null, i % 5 ? null : t.slice(-2).join(" "));
    }
  })();
});

afterAll(() => {
  if (onPg) return;
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A table of the texts with "gateway" in every 4th row, "timeout" in every 5th, both (twice each) in every 20th, whose text is short. */
function gatewayTimeoutTable(table: string): void {
  db.exec(`create virtual table ${table} using fts5(content, tokenize='porter unicode61')`);
  const insert = db.prepare(`insert into ${table}(rowid, content) values (?, ?)`);
  db.transaction(() => {
    for (let i = 1; i <= ROWS; i++) {
      const words = text(i).split(" ");
      if (i % 20 === 0) insert.run(i, [...words.slice(0, 6 + (i % 7)), "gateway", "timeout", "gateway", "timeout"].join(" "));
      else insert.run(i, [...words, ...(i % 4 === 0 ? ["gateway"] : []), ...(i % 5 === 0 ? ["timeout"] : [])].join(" "));
    }
  })();
}

function exhaustive(table: string, terms: string[], k: number) {
  return db.prepare(`select rowid, bm25(${table}) as rank from ${table} where ${table} match ? order by rank, rowid limit ?`).all(matchExpression(terms, "any"), k) as { rowid: number; rank: number }[];
}

describe.skipIf(onPg)("selectiveTopByBm25 [SQLite only: the FTS5 max-score pruning, held to FTS5 on raw tables]", () => {
  it("the words are common and selective as the test means them", () => {
    const rows = (w: string) => db.prepare("select count(*) from notes_fts where notes_fts match ?").pluck().get(`"${w}"`) as number;
    for (const w of COMMON) expect(rows(w)).toBeGreaterThan(SELECTIVE_ROWS);
    expect(rows("certificates") + rows("renewed") + rows("kubernetes") + rows("running") + rows("zephyrine")).toBeLessThan(SELECTIVE_ROWS);
  });

  it.each([
    ["notes_fts", ["server", "certificates", "request", "renewed"], 10],
    ["notes_fts", ["running", "config", "kubernetes"], 25],
    ["named_fts", ["server", "certificates", "renewed"], 10],
  ] as const)("ranks %s %j like FTS5 scoring every match (same rows, order and scores)", (table, terms, k) => {
    const pruned = selectiveTopByBm25({ db, schema: "main", table, terms: [...terms], k });
    expect(pruned).not.toBeNull();
    expect(pruned!.common.sort()).toEqual(terms.filter((t) => COMMON.includes(t)).sort());
    const whole = exhaustive(table, [...terms], k);
    expect(pruned!.rows.map((r) => r.rowid)).toEqual(whole.map((r) => r.rowid));
    for (const [i, r] of pruned!.rows.entries()) expect(r.rank).toBeCloseTo(whole[i].rank, 9);
  });

  it("stops rescoring once no seed left can reach the k-th score, with the answer rescoring every seed gives", () => {
    // The common words here are in most rows (idf near 0): after the first k seeds no later one can climb past the k-th.
    const terms = ["server", "certificates", "request", "renewed"];
    clearSelectiveMatchCaches();
    const pruned = selectiveTopByBm25({ db, schema: "main", table: "notes_fts", terms, k: 10 });
    expect(rescoredByLastRanking()).toBeLessThan(4 * 10);
    const whole = exhaustive("notes_fts", terms, 10);
    expect(pruned!.rows.map((r) => r.rowid)).toEqual(whole.map((r) => r.rowid));
    for (const [i, r] of pruned!.rows.entries()) expect(r.rank).toBeCloseTo(whole[i].rank, 9);
  });

  it("says when the answer is proven to be the whole query's top k, and it is", () => {
    const pruned = selectiveTopByBm25({ db, schema: "main", table: "notes_fts", terms: ["certificates", "server"], k: 5 });
    expect(pruned?.exact).toBe(true);
    expect(pruned!.rows.map((r) => r.rowid)).toEqual(exhaustive("notes_fts", ["certificates", "server"], 5).map((r) => r.rowid));
  });

  it("steps aside when the selective words match fewer rows than asked for and the common words do not narrow, so a row only a common word matches is still found", () => {
    // "zephyrine" is in 8 rows: 25 results need rows that only "server" matches.
    expect(selectiveTopByBm25({ db, schema: "main", table: "notes_fts", terms: ["zephyrine", "server"], k: 25 })).toBeNull();
    const whole = exhaustive("notes_fts", ["zephyrine", "server"], 25);
    expect(whole).toHaveLength(25);
    expect(whole.some((r) => !text(r.rowid).includes("zephyrine"))).toBe(true);
  });

  it("a rare word in fewer rows than asked for beside common words that meet in few rows: its rows first, then the rows holding every common word, as FTS5 ranks the whole query", () => {
    // "gateway" in every 4th row, "timeout" in every 5th (3000 and 2400 rows: common), both in every 20th (600 rows, short
    // texts); "zephyrine" in 8 rows. 25 answers need 17 rows without it: FTS5 scored all 4800 rows of the query for them.
    gatewayTimeoutTable("trio_fts");
    const terms = ["gateway", "zephyrine", "timeout"];
    const whole = exhaustive("trio_fts", terms, 25);
    const top = selectiveTopByBm25({ db, schema: "main", table: "trio_fts", terms, k: 25 });
    expect(top).not.toBeNull();
    expect(top!.rows.map((r) => r.rowid)).toEqual(whole.map((r) => r.rowid));
    for (const [i, r] of top!.rows.entries()) expect(r.rank).toBeCloseTo(whole[i].rank, 9);
    expect(top!.exact).toBe(true);
    expect(top!.common).toEqual(["gateway", "timeout"]);
    // Both kinds of rows are in the answer: the rare word's (all 8) and rows it is not in.
    const rare = top!.rows.filter((r) => text(r.rowid).includes("zephyrine")).length;
    expect(rare).toBe(8);
    expect(top!.rows.length - rare).toBe(17);
  });

  it("a rare word in fewer rows than asked for beside two common words that meet in many rows: its rows, then the two words' best rows by max-score, as FTS5 ranks the whole query", () => {
    // "gateway" in every 2nd row (6000), "timeout" in 2 of 3 (8000), both in 4000: past what the every-word tier takes.
    db.exec("create virtual table duo_fts using fts5(content, tokenize='porter unicode61')");
    const insert = db.prepare("insert into duo_fts(rowid, content) values (?, ?)");
    db.transaction(() => {
      for (let i = 1; i <= ROWS; i++) insert.run(i, [text(i), ...(i % 2 === 0 ? ["gateway"] : []), ...(i % 3 !== 0 ? ["timeout"] : []), ...(i % 7 === 0 ? ["timeout"] : [])].join(" "));
    })();
    const terms = ["timeout", "zephyrine", "gateway"];
    const whole = exhaustive("duo_fts", terms, 25);
    const top = selectiveTopByBm25({ db, schema: "main", table: "duo_fts", terms, k: 25 });
    expect(top).not.toBeNull();
    expect(top!.rows.map((r) => r.rowid)).toEqual(whole.map((r) => r.rowid));
    for (const [i, r] of top!.rows.entries()) expect(r.rank).toBeCloseTo(whole[i].rank, 9);
    expect(top!.exact).toBe(true);
    expect(top!.rows.filter((r) => !text(r.rowid).includes("zephyrine")).length).toBe(17);

    // A word in no row (a number from elsewhere) beside the two: the answer is the two words' own, as FTS5 ranks it.
    const nowhere = ["timeout", "4242", "gateway"];
    const wholeNowhere = exhaustive("duo_fts", nowhere, 25);
    const topNowhere = selectiveTopByBm25({ db, schema: "main", table: "duo_fts", terms: nowhere, k: 25 });
    expect(topNowhere).not.toBeNull();
    expect(topNowhere!.rows.map((r) => r.rowid)).toEqual(wholeNowhere.map((r) => r.rowid));
    for (const [i, r] of topNowhere!.rows.entries()) expect(r.rank).toBeCloseTo(wholeNowhere[i].rank, 9);
    expect(topNowhere!.exact).toBe(true);

    // That word then written in one row (row counts are reused within 1%, so "4242" was last counted in no row): the new
    // row is found, first, with FTS5's score.
    db.prepare("insert into duo_fts(rowid, content) values (?, ?)").run(ROWS + 1, "timeout 4242 notes");
    const afterWrite = selectiveTopByBm25({ db, schema: "main", table: "duo_fts", terms: nowhere, k: 25 });
    const wholeAfter = exhaustive("duo_fts", nowhere, 25);
    expect(wholeAfter[0].rowid).toBe(ROWS + 1);
    expect(afterWrite!.rows.map((r) => r.rowid)).toEqual(wholeAfter.map((r) => r.rowid));
    for (const [i, r] of afterWrite!.rows.entries()) expect(r.rank).toBeCloseTo(wholeAfter[i].rank, 9);
  });

  it("a rare word beside common words whose best row holds only one of them: that row is found (max-score over two), or the whole query is left to FTS5", () => {
    // "gateway" and "timeout" meet in 600 long rows, which rows holding one of them outrank; row 7 is only "gateway gateway
    // gateway": short, it outscores every row but the rare word's 16.
    db.exec("create virtual table skew_fts using fts5(content, tokenize='porter unicode61')");
    const insert = db.prepare("insert into skew_fts(rowid, content) values (?, ?)");
    db.transaction(() => {
      for (let i = 1; i <= ROWS; i++) {
        // Rows holding both common words are long (low scores): rows holding one word outrank them.
        const long = i % 20 === 0 ? [text(i + 2), text(i + 3), text(i + 4), text(i + 5)] : [];
        const words = [text(i), text(i + 1), ...long, ...(i % 4 === 0 ? ["gateway"] : []), ...(i % 5 === 0 ? ["timeout"] : []), ...(i % 6 === 0 ? ["latency"] : [])];
        insert.run(i, i === 7 ? "gateway gateway gateway" : words.join(" "));
      }
    })();
    const two = ["gateway", "zephyrine", "timeout"];
    const whole = exhaustive("skew_fts", two, 25);
    const rare = whole.filter((r) => r.rowid !== 7 && /zephyrine/.test(db.prepare("select content from skew_fts where rowid = ?").pluck().get(r.rowid) as string)).length;
    expect(whole[rare].rowid).toBe(7);
    const top = selectiveTopByBm25({ db, schema: "main", table: "skew_fts", terms: two, k: 25 });
    expect(top!.rows.map((r) => r.rowid)).toEqual(whole.map((r) => r.rowid));
    expect(top!.exact).toBe(true);
    // Three common words: only an answer proven exact is given; otherwise null, and the caller asks FTS5.
    const three = ["gateway", "zephyrine", "timeout", "latency"];
    const top3 = selectiveTopByBm25({ db, schema: "main", table: "skew_fts", terms: three, k: 25 });
    const ids = (rows: { rowid: number }[]) => rows.map((r) => r.rowid).join(",");
    expect(top3 === null || (top3.exact && ids(top3.rows) === ids(exhaustive("skew_fts", three, 25)))).toBe(true);
  });

  it("steps aside when there is nothing to prune: only common words, only selective words, one word, a small table", () => {
    expect(selectiveTopByBm25({ db, schema: "main", table: "notes_fts", terms: ["server", "request"], k: 10 })).toBeNull();
    expect(selectiveTopByBm25({ db, schema: "main", table: "notes_fts", terms: ["certificates", "kubernetes"], k: 10 })).toBeNull();
    expect(selectiveTopByBm25({ db, schema: "main", table: "notes_fts", terms: ["certificates"], k: 10 })).toBeNull();
    db.exec("create virtual table small_fts using fts5(content, tokenize='porter unicode61')");
    const insert = db.prepare("insert into small_fts(rowid, content) values (?, ?)");
    db.transaction(() => {
      for (let i = 1; i <= 500; i++) insert.run(i, text(i));
    })();
    expect(selectiveTopByBm25({ db, schema: "main", table: "small_fts", terms: ["server", "certificates"], k: 5 })).toBeNull();
  });

  it("when every word is common, ranks the rows holding every word as FTS5 does, and proves them the whole query's top k when the bound allows", () => {
    // "gateway" in every 4th row, "timeout" in every 5th (both well past SELECTIVE_ROWS); every 20th row holds both, several times, in a short text.
    gatewayTimeoutTable("pair_fts");
    const terms = ["gateway", "timeout"];
    const top = selectiveTopByBm25({ db, schema: "main", table: "pair_fts", terms, k: 10 });
    expect(top).not.toBeNull();
    expect(top!.exact).toBe(true);
    const whole = exhaustive("pair_fts", terms, 10);
    expect(top!.rows.map((r) => r.rowid)).toEqual(whole.map((r) => r.rowid));
    for (const [i, r] of top!.rows.entries()) expect(r.rank).toBeCloseTo(whole[i].rank, 9);
    // More rows asked for than hold both words: the caller ranks the whole query (rows with one word fill the list).
    expect(selectiveTopByBm25({ db, schema: "main", table: "pair_fts", terms, k: ROWS / 20 + 1 })).toBeNull();

    // A third common word, in 2400 new rows without "gateway": no row holds every word, so the rows holding all but one are ranked.
    db.transaction(() => {
      for (let i = 1; i <= ROWS; i += 5) db.prepare("insert into pair_fts(rowid, content) values (?, ?)").run(ROWS + i, `${text(i)} latency${i % 3 === 0 ? " timeout" : ""}`);
    })();
    const three = ["gateway", "timeout", "latency"];
    const partial = selectiveTopByBm25({ db, schema: "main", table: "pair_fts", terms: three, k: 10 });
    expect(partial).not.toBeNull();
    const whole3 = exhaustive("pair_fts", three, 10);
    expect(partial!.rows.map((r) => r.rowid)).toEqual(whole3.map((r) => r.rowid));
    for (const [i, r] of partial!.rows.entries()) expect(r.rank).toBeCloseTo(whole3[i].rank, 9);
  });

  it("follows writes: a row added after a query is ranked by the next one", () => {
    const terms = ["certificates", "renewed", "server"];
    selectiveTopByBm25({ db, schema: "main", table: "notes_fts", terms, k: 5 });
    db.prepare("insert into notes(seq, content) values (?, ?)").run(ROWS + 1, "certificates renewed certificates renewed server");
    const after = selectiveTopByBm25({ db, schema: "main", table: "notes_fts", terms, k: 5 });
    expect(after!.rows[0].rowid).toBe(ROWS + 1);
    expect(after!.rows.map((r) => r.rowid)).toEqual(exhaustive("notes_fts", terms, 5).map((r) => r.rowid));
  });
});

describe("a long OR query of common and rare words, through search on this backend", () => {
  const DOCS = 900;
  let env: TestEnv;
  beforeEach(async () => {
    env = await useTestBackend();
    await seedStore("sel");
    for (let at = 0; at < DOCS; at += 300) {
      const documents = Array.from({ length: 300 }, (_, k) => ({ path: `n/${at + k + 1}.md`, content: text(at + k + 1) }));
      await stores().putDocuments({ store: "sel", input: { documents }, actor: "test" });
    }
  }, patience(120_000));
  afterEach(async () => {
    await env.cleanup();
  });
  const hits = async (q: string, limit: number) => (await searchHere("sel", { q, mode: "fts", match: "any", group: "chunk", limit })).results;
  const has = (path: string, ...words: string[]) => words.some((w) => text(Number(path.slice(2, -3))).split(" ").includes(w));

  it("ranks the rows holding the rare words first, then the rows only common words match", async () => {
    const rare = Array.from({ length: DOCS }, (_, i) => i + 1).filter((i) => text(i).includes("certificates")).length;
    expect(rare).toBeGreaterThan(3);
    const top = await hits("server certificates request renewed", rare + 5);
    expect(top).toHaveLength(rare + 5);
    // Every row with the rare words outranks every row without them.
    expect(top.slice(0, rare).every((h) => has(h.path, "certificates", "renewed"))).toBe(true);
    expect(top.slice(rare).every((h) => !has(h.path, "certificates", "renewed") && has(h.path, "server", "request"))).toBe(true);
  });

  it("a rare word in fewer rows than asked for: the rows only the common word matches fill the list", async () => {
    const top = await hits("zephyrine server", 25);
    expect(top).toHaveLength(25);
    const rare = top.filter((h) => has(h.path, "zephyrine"));
    expect(rare.length).toBeGreaterThan(0);
    expect(top.slice(0, rare.length)).toEqual(rare);
    expect(top.slice(rare.length).every((h) => has(h.path, "server"))).toBe(true);
    const [{ n }] = await storeSql<{ n: number | string }>("sel", "select count(*) as n from chunks");
    expect(Number(n)).toBe(DOCS);
  });
});
