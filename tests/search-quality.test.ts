import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onPg } from "./backend";
import { wordsOf, type CorpusDoc } from "@/bench/doc-queries";
import { buildKnownItemSet, drawPinnedSamples, formatManifest, loadKnownItemCorpus, loadPinnedSample, parseManifest, sampleKnownItemCorpus } from "@/bench/known-items";
import { buildLabelledSet, evaluateMode, prepareCorpus, type LabelledQuery } from "@/bench/search-eval";
import { patience } from "./fixtures/patience";

// The promise behind the default mode: on a labelled known-item set over real
// text, hybrid never ranks worse than the better of its two signals.
// The corpus is the markdown shipped inside the pinned `next` package: real text
// nobody here wrote, and fixed by the lockfile (adding a dependency cannot change it).
// The labelled-set harness (bench/search-eval.ts) indexes with reindexStore and searches with searchStore, SQLite's;
// PostgreSQL's known-item quality is measured side by side in bench/pg-store.bench.ts. The set-building tests below are
// pure and run on both.
describe.skipIf(onPg)("search quality on a labelled set (markdown inside node_modules/next) [SQLite only: the bench/search-eval.ts harness is SQLite's]", () => {
  let corpus: Awaited<ReturnType<typeof prepareCorpus>>;
  let queries: LabelledQuery[];
  const saved = { ...process.env };
  beforeAll(async () => {
    corpus = await prepareCorpus({ root: path.resolve("node_modules/next"), include: "**/*.md", store: "quality" });
    queries = buildLabelledSet(corpus.chunks, 90);
  }, patience(120_000));
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
  }, patience(120_000));
});

// The document-level known-item set (bench/known-items.ts) is a fair test only
// if the sentence behind each query is gone from what gets indexed, and a
// baseline only if the same seed gives the same set on every run.
describe("document-level known-item set", () => {
  const sentence = (topic: string, i: number) => `The ${topic} module number ${i} quietly rewrites configuration files whenever deployment pipelines request fresh credentials.`;
  const docs: CorpusDoc[] = ["alpha", "beta", "gamma", "delta"].map((topic) => ({
    path: `${topic}/README.md`,
    text: [`# ${topic}`, "", ...Array.from({ length: 6 }, (_, i) => sentence(topic, i)), "", "```js", `require("${topic}")`, "```", ""].join("\n"),
  }));

  it("cuts each query's sentence out of the indexed document and queries with two thirds of its words", () => {
    const set = buildKnownItemSet({ docs, count: 3 });
    expect(set.queries).toHaveLength(3);
    expect(new Set(set.queries.map((q) => q.target)).size).toBe(3);
    for (const q of set.queries) {
      const original = docs.find((d) => d.path === q.target)!.text;
      const indexed = set.docs.find((d) => d.path === q.target)!.text;
      expect(original).toContain(q.sentence);
      expect(indexed).not.toContain(q.sentence);
      expect(set.docs.every((d) => !d.text.includes(q.sentence))).toBe(true);
      expect(indexed.length).toBe(original.length - q.sentence.length);
      const words = wordsOf(q.sentence);
      const kept = wordsOf(q.q);
      expect(kept).toHaveLength(words.length - Math.floor(words.length / 3));
      // The kept words are the sentence's, in its order.
      let at = 0;
      for (const w of kept) at = words.indexOf(w, at) + 1;
      expect(at).toBeGreaterThan(0);
      expect(kept.every((w) => words.includes(w))).toBe(true);
    }
    // Documents that are not targets are indexed as they are.
    const untouched = set.docs.filter((d) => !set.queries.some((q) => q.target === d.path));
    expect(untouched.map((d) => d.text)).toEqual(untouched.map((d) => docs.find((o) => o.path === d.path)!.text));
  });

  it("is the same for the same seed and differs for another", () => {
    expect(buildKnownItemSet({ docs, count: 3, seed: 5 })).toEqual(buildKnownItemSet({ docs, count: 3, seed: 5 }));
    expect(buildKnownItemSet({ docs, count: 3, seed: 5 }).queries).not.toEqual(buildKnownItemSet({ docs, count: 3, seed: 6 }).queries);
  });

  it("never uses a sentence that another document also contains", () => {
    const shared = "Every package in this workspace publishes typed declarations alongside its compiled output files.";
    const withShared = docs.map((d) => ({ ...d, text: `${shared}\n\n${d.text}` }));
    const set = buildKnownItemSet({ docs: withShared, count: 4 });
    expect(set.queries).toHaveLength(4);
    expect(set.queries.some((q) => q.sentence === shared)).toBe(false);
  });

  it("loads the corpus in sorted path order without duplicates or boilerplate, the same on every call", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-known-items-test-"));
    try {
      const write = (rel: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
        fs.writeFileSync(path.join(root, rel), text);
      };
      const body = (name: string) => `# ${name}\n\n${sentence(name, 1).repeat(40)}\n`;
      write("b-pkg/README.md", body("b"));
      write("a-pkg/README.md", body("a"));
      write("a-pkg/node_modules/b-pkg/README.md", body("b")); // vendored copy: sorts first, so it is the one kept
      write("a-pkg/docs/guide.md", `${body("guide")}one more line that differs`);
      write("a-pkg/docs/guide-copy.md", `${body("guide")}another ending entirely`); // same opening
      write("a-pkg/CHANGELOG.md", body("changes"));
      write("a-pkg/tiny.md", "# tiny\n");
      const loaded = loadKnownItemCorpus({ root, limit: 10 });
      expect(loaded.map((d) => d.path)).toEqual(["a-pkg/README.md", "a-pkg/docs/guide-copy.md", "a-pkg/node_modules/b-pkg/README.md"]);
      expect(loadKnownItemCorpus({ root, limit: 10 })).toEqual(loaded);
      expect(loadKnownItemCorpus({ root, limit: 2 }).map((d) => d.path)).toEqual(["a-pkg/README.md", "a-pkg/docs/guide-copy.md"]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("draws a seeded sample per seed, pins it by path, package and hash, and reports pinned files that moved", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-known-items-pin-"));
    try {
      const write = (rel: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
        fs.writeFileSync(path.join(root, rel), text);
      };
      write("pkg/package.json", JSON.stringify({ name: "pkg", version: "1.2.3" }));
      for (let i = 0; i < 12; i++) write(`pkg/docs/d${String(i).padStart(2, "0")}.md`, `# d${i}\n\n${sentence(`topic${i}`, i).repeat(30)}\n`);
      const pool = loadKnownItemCorpus({ root, limit: 100 });
      expect(pool).toHaveLength(12);
      const a = sampleKnownItemCorpus({ pool, limit: 5, seed: 1 });
      expect(a).toEqual(sampleKnownItemCorpus({ pool, limit: 5, seed: 1 }));
      expect(a.map((d) => d.path)).toEqual([...a.map((d) => d.path)].sort());
      expect(sampleKnownItemCorpus({ pool, limit: 5, seed: 2 }).map((d) => d.path)).not.toEqual(a.map((d) => d.path));

      const manifest = drawPinnedSamples({ root, limit: 5, seeds: [1, 2] });
      expect(parseManifest(formatManifest(manifest))).toEqual(manifest);
      expect(formatManifest(manifest)).not.toContain("topic"); // paths and hashes, never the text
      expect(manifest.filter((d) => d.seed === 1).map((d) => d.path)).toEqual(a.map((d) => d.path));
      expect(new Set(manifest.map((d) => d.pkg))).toEqual(new Set(["pkg@1.2.3"]));
      expect(loadPinnedSample({ root, manifest, seed: 1 })).toEqual({ docs: a, missing: [], changed: [] });

      // A dependency moved: one pinned file changed, one is gone. They are named and left out, never silently replaced.
      const [changed, gone] = a.map((d) => d.path);
      write(changed, "# rewritten\n");
      fs.rmSync(path.join(root, gone));
      const after = loadPinnedSample({ root, manifest, seed: 1 });
      expect(after.changed).toEqual([changed]);
      expect(after.missing).toEqual([gone]);
      expect(after.docs.map((d) => d.path)).toEqual(a.slice(2).map((d) => d.path));
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
