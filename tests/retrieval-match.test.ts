/**
 * The one full-text match builder (lib/retrieval/match.ts) against real FTS5
 * tables with both chunk tokenizers (today's `unicode61` and the stemmed
 * `porter unicode61` of index migration 0009): hostile text is only ever
 * words, natural-language queries drop their stopwords, and the same
 * expression finds the same documents under either tokenizer (stems
 * included with porter). Those tables are SQLite's; what a user sees of the
 * same rules (hostile text is words, stopwords dropped, stems found) is
 * checked through the search route on both backends at the end.
 */
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import { adjacentPairShare, buildFtsMatch, exactFormShare, foldWord, matchTerms } from "@/lib/retrieval";
import { itSqliteOnly, seedDocument, seedStore, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

const DOCS = ["Restart the nginx proxy after rotating certificates", "Feed the sourdough starter twice a day", 'A "quoted" column: title NEAR(x y) and OR NOT *'];

const tables = ["unicode61 remove_diacritics 2", "porter unicode61 remove_diacritics 2"].map((tokenize) => {
  const db = new Database(":memory:");
  db.exec(`create virtual table t using fts5(text, tokenize='${tokenize}')`);
  const insert = db.prepare("insert into t(rowid, text) values (?, ?)");
  DOCS.forEach((d, i) => insert.run(i + 1, d));
  return { tokenize, db, find: (match: string) => (db.prepare("select rowid as id from t where t match ? order by rowid").all(match) as { id: number }[]).map((r) => r.id) };
});
afterAll(() => tables.forEach((t) => t.db.close()));

const FTS5 = "an in-memory FTS5 table with this tokenizer";

describe.each(tables)("with tokenizer $tokenize", (table) => {
  itSqliteOnly("never lets query text act as FTS5 syntax", FTS5, () => {
    for (const q of ['"', 'title:"x', "NEAR(a b", "a OR", "*", "x AND NOT y", "col:* ^start", "'); drop table t; --", "\u0000\uE000"]) {
      const match = buildFtsMatch(q, { match: "any" });
      if (match !== null) expect(() => table.find(match)).not.toThrow();
    }
    // Operators are words: "near" finds the document that says NEAR, it does not group.
    expect(table.find(buildFtsMatch("NEAR", { match: "all" })!)).toEqual([3]);
  });

  itSqliteOnly("drops stopwords from a natural-language query, so 'all words' still finds the page", FTS5, () => {
    const q = "how do I restart the proxy";
    expect(matchTerms(q)).toEqual(["restart", "proxy"]);
    expect(table.find(buildFtsMatch(q, { match: "all" })!)).toEqual([1]);
    // Kept, the stopwords would demand words the page does not have.
    expect(table.find(buildFtsMatch(q, { match: "all", stopwords: "keep" })!)).toEqual([]);
  });

  it("keeps short queries as written, even all stopwords", () => {
    expect(matchTerms("the who")).toEqual(["the", "who"]);
    expect(matchTerms("to be or not to be")).toEqual(["to", "be", "or", "not"]);
  });

  itSqliteOnly("finds stems only where the tokenizer stems", FTS5, () => {
    const found = table.find(buildFtsMatch("certificate rotation", { match: "any" })!);
    expect(found).toEqual(table.tokenize.startsWith("porter") ? [1] : []);
  });
});

describe("exact written forms", () => {
  it("counts the query words a text holds as written, folding case and accents as unicode61 does, not stems", () => {
    const terms = ["configuration", "proxy", "café"].map(foldWord);
    expect(terms).toEqual(["configuration", "proxy", "cafe"]);
    expect(exactFormShare(terms, "The PROXY configuration, by the Café door")).toBe(1);
    expect(exactFormShare(terms, "The proxy is configured; cafés nearby")).toBeCloseTo(1 / 3);
    expect(exactFormShare(terms, "nothing here")).toBe(0);
    expect(exactFormShare([], "anything")).toBe(0);
    // Whole words only, in ASCII text and in text with accents or letters outside the BMP beside the word.
    expect(exactFormShare(["proxy"], "proxyless reverse-proxy")).toBe(1);
    expect(exactFormShare(["proxy"], "proxyless proxying")).toBe(0);
    expect(exactFormShare(["cafe"], "décafe et cafés — un CAFÉ")).toBe(1);
    expect(exactFormShare(["cafe"], "décafe et cafés")).toBe(0);
    expect(exactFormShare(["cafe"], "𝐀cafe cafe𝐀")).toBe(0);
    // Repetitive text costs one pass, not one per character: an occurrence inside a long word skips that word.
    const run = `x${"a".repeat(200_000)} `;
    expect(exactFormShare(["a".repeat(60), "aa", "a"], run)).toBe(0);
    expect(exactFormShare(["aa"], `${run}aa`)).toBe(1);
  });
});

describe("adjacent query words near each other (proximity)", () => {
  it("counts the query's adjacent word pairs a text has in order within the window, as written", () => {
    const terms = matchTerms("connection pool size").map(foldWord);
    expect(terms).toEqual(["connection", "pool", "size"]);
    expect(adjacentPairShare(terms, "Set the Connection Pool Size before deploying.", 1)).toBe(1);
    // Stopwords between the words count as words: "pool of the size" is pool·size at distance 3.
    expect(adjacentPairShare(terms, "a connection pool of the size you need", 2)).toBe(0.5);
    expect(adjacentPairShare(terms, "a connection pool of the size you need", 3)).toBe(1);
    // Order matters, and words in different places are not near.
    expect(adjacentPairShare(terms, "size pool connection", 5)).toBe(0);
    expect(adjacentPairShare(terms, `connection ${"x ".repeat(10)}pool ${"y ".repeat(10)}size`, 5)).toBe(0);
    // Stems are not written forms; accents fold as unicode61 folds them; one word has no pairs.
    expect(adjacentPairShare(terms, "connections pooled sizes", 5)).toBe(0);
    expect(adjacentPairShare(["cafe", "creme"], "un Café Crème", 1)).toBe(1);
    expect(adjacentPairShare(["proxy"], "proxy proxy", 5)).toBe(0);
  });
});

describe("the same rules through the search route, on this backend", () => {
  const TOKEN = "bootstrap-token-for-match-tests-0123456789";
  let env: TestEnv;
  /** Store match holding DOCS. */
  const seed = async () => {
    await seedStore("match");
    for (const [i, d] of DOCS.entries()) await seedDocument("match", `d${i + 1}.md`, d);
  };
  beforeEach(async () => {
    env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN }, { seed });
  });
  afterEach(async () => {
    await env.cleanup();
  });
  const search = async (body: Record<string, unknown>) => callRoute(searchRoute.POST, { token: TOKEN, params: { store: "match" }, body: { mode: "fts", group: "chunk", ...body } });
  const found = async (body: Record<string, unknown>) => {
    const r = await search(body);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    return (r.json.results as { path: string }[]).map((h) => h.path).sort();
  };

  it("hostile query text is only words: every query answers 200 (or 400 for one with no word), never a 500", async () => {
    for (const q of ['"', 'title:"x', "NEAR(a b", "a OR", "*", "x AND NOT y", "col:* ^start", "'); drop table t; --", "a & !b | c:*", "\\", "\uE000 proxy"]) {
      const r = await search({ q, match: "any" });
      expect([200, 400], `${q}: ${JSON.stringify(r.json)}`).toContain(r.status);
    }
    // Operators are words: "near" finds the document that says NEAR, it does not group.
    expect(await found({ q: "NEAR" })).toEqual(["d3.md"]);
    expect(await found({ q: "proxy OR sourdough" })).toEqual([]);
  });

  it("a query with a NUL character is refused or answered, never a 500", async () => {
    const r = await search({ q: "proxy\u0000restart", match: "any" });
    expect([200, 400], JSON.stringify(r.json)).toContain(r.status);
  });

  it("drops stopwords from a natural-language query, so 'all words' still finds the page", async () => {
    expect(await found({ q: "how do I restart the proxy", match: "all" })).toEqual(["d1.md"]);
  });

  it("finds stems: 'certificate rotation' finds the page about rotating certificates", async () => {
    expect(await found({ q: "certificate rotation", match: "any" })).toEqual(["d1.md"]);
  });
});
