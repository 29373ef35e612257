import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildLabelledSet, evaluateMode, prepareCorpus, type LabelledQuery } from "@/bench/search-eval";

// The promise behind the default mode: on a labelled known-item set over real
// text, hybrid never ranks worse than the better of its two signals.
// The corpus is the markdown shipped inside the pinned `next` package: real text
// nobody here wrote, and fixed by the lockfile (adding a dependency cannot change it).
describe("search quality on a labelled set (markdown inside node_modules/next)", () => {
  let corpus: Awaited<ReturnType<typeof prepareCorpus>>;
  let queries: LabelledQuery[];
  const saved = { ...process.env };
  beforeAll(async () => {
    corpus = await prepareCorpus({ root: path.resolve("node_modules/next"), include: "**/*.md", store: "quality" });
    queries = buildLabelledSet(corpus.chunks, 90);
  }, 120_000);
  afterAll(() => {
    corpus.cleanup();
    process.env = saved;
  });

  it("default hybrid ≥ max(full-text, vector) by MRR@10", async () => {
    const fts = await evaluateMode("quality", queries, "fts", { mode: "fts", match: "any" });
    const ftsAll = await evaluateMode("quality", queries, "fts", { mode: "fts" });
    const vector = await evaluateMode("quality", queries, "vector", { mode: "vector" });
    const hybrid = await evaluateMode("quality", queries, "hybrid", {});
    expect(queries).toHaveLength(90);
    expect(hybrid.mrr).toBeGreaterThanOrEqual(Math.max(fts.mrr, ftsAll.mrr, vector.mrr));
    // Misspelled queries: bm25 on all words finds nothing; hybrid still does.
    expect(ftsAll.byType.typo).toBe(0);
    expect(hybrid.byType.typo).toBeGreaterThan(0);
  }, 120_000);
});
