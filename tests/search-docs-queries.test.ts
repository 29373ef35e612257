import { describe, expect, it } from "vitest";
import { buildDocQuerySet, proseSentences, wordsOf, type CorpusDoc } from "@/bench/doc-queries";

// The document-level query set (bench/search-docs.bench.ts) is only a fair
// test if the sentence a query comes from is gone from what gets indexed, and
// only a baseline if it is the same on every run.
const docs: CorpusDoc[] = [
  {
    path: "alpha/README.md",
    text: [
      "# Alpha parser handles streaming markdown documents across many different platforms",
      "",
      "The alpha parser reads streaming markdown input and emits structured syntax nodes for every block it encounters.",
      "It keeps memory usage bounded because tokens are released after each paragraph has been processed completely.",
      "",
      "```js",
      "const parser = createAlphaParser({ streaming: true, bounded: true, release: 'paragraph' })",
      "```",
      "",
      "- Configuration options control whether footnotes, tables and definition lists are recognised during parsing.",
    ].join("\n"),
  },
  {
    path: "beta/docs/guide.md",
    text: [
      "Beta scheduler distributes queued background jobs fairly between workers running on separate machines.",
      "Failed jobs are retried with exponential backoff until the configured maximum number of attempts is reached.",
      "",
      "| option | meaning of every single configuration option documented in this table |",
    ].join("\n"),
  },
];

describe("document-level known-item queries", () => {
  it("cuts each query's sentence out of the indexed text and keeps two thirds of its words", () => {
    const set = buildDocQuerySet({ docs, count: 10 });
    expect(set.queries).toHaveLength(2);
    for (const q of set.queries) {
      const original = docs.find((d) => d.path === q.target)!.text;
      const indexed = set.docs.find((d) => d.path === q.target)!.text;
      expect(original).toContain(q.sentence);
      expect(indexed).not.toContain(q.sentence);
      expect(indexed.length).toBe(original.length - q.sentence.length);
      const words = wordsOf(q.sentence);
      expect(wordsOf(q.q)).toHaveLength(words.length - Math.floor(words.length / 3));
    }
  });

  it("never picks a heading, code or table line", () => {
    const picked = proseSentences(docs[0].text).map((s) => docs[0].text.slice(s.start, s.end));
    expect(picked.some((s) => s.includes("#") || s.includes("createAlphaParser"))).toBe(false);
    expect(picked).toContain("Configuration options control whether footnotes, tables and definition lists are recognised during parsing.");
    const beta = proseSentences(docs[1].text).map((s) => docs[1].text.slice(s.start, s.end));
    expect(beta.some((s) => s.includes("|"))).toBe(false);
  });

  it("is the same on every run", () => {
    expect(buildDocQuerySet({ docs, count: 10 })).toEqual(buildDocQuerySet({ docs, count: 10 }));
    expect(buildDocQuerySet({ docs, count: 10, seed: 1 }).queries).not.toEqual(buildDocQuerySet({ docs, count: 10, seed: 2 }).queries);
  });
});
