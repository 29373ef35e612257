import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemorySchema } from "@/lib/index/memories";
import { documentTitleOf } from "@/lib/index/titles";
import { putDocumentsSchema } from "@/lib/index/ingest";
import { searchInputSchema } from "@/lib/index/search";
import { stripTableSyntax } from "@/lib/retrieval/snippet-tables";
import { stores } from "@/lib/stores/backend";
import { seedStore, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;
const store = "tables";

const seed = () => seedStore(store);
beforeEach(async () => {
  env = await useTestBackend({}, { seed });
});
afterEach(async () => env.cleanup());

const TABLE_NOTE = ["# Retention", "", "| Setting | Default | Meaning |", "| :--- | ---: | --- |", "| retention | 30 days | how long a zebrafish record is kept |", "| purge | nightly | when expired records go |", ""].join("\n");

describe("search snippets of markdown tables", () => {
  it("show the cells' words, never the table's pipes and alignment row, on both modes that make lexical snippets", async () => {
    await stores().createMemory({ store, input: createMemorySchema.parse({ path: "ops/retention", body: TABLE_NOTE }), actor: "user:ed" });
    for (const mode of ["fts", "hybrid"] as const) {
      const { results } = await stores().search({ store, input: searchInputSchema.parse({ q: "zebrafish retention", mode }) });
      expect(results.length).toBeGreaterThan(0);
      const { snippet, highlights } = results[0];
      expect(snippet).toContain("zebrafish");
      expect(snippet).not.toMatch(/\||---/);
      // The highlights still point at the matched words of the cleaned text.
      expect(highlights.map(([s, e]) => snippet.slice(s, e).toLowerCase())).toContain("zebrafish");
    }
  });
});

describe("stripTableSyntax", () => {
  it("drops alignment rows, whole or cut by the snippet window, and turns cell pipes into separators", () => {
    expect(stripTableSyntax("| Name | Value |\n| --- | ---: |\n| a | b |").replace(/\s+/g, " ").trim()).toBe("Name · Value a · b");
    expect(stripTableSyntax("--- | --- |\n| x | y |").replace(/\s+/g, " ").trim()).toBe("x · y");
    expect(stripTableSyntax("x |---|---| y").replace(/\s+/g, " ").trim()).toBe("x y");
  });

  it("keeps text without tables, an escaped pipe and prose dashes as they are", () => {
    expect(stripTableSyntax("dates -- a range")).toBe("dates -- a range");
    expect(stripTableSyntax("cell \\| escaped | other")).toBe("cell | escaped · other");
    expect(stripTableSyntax("no table here")).toBe("no table here");
  });
});

describe("search hit titles", () => {
  it("name each document by its heading, else its first line, else its file name, read in one call on either backend", async () => {
    await stores().createMemory({ store, input: createMemorySchema.parse({ path: "ops/retention", body: TABLE_NOTE, summary: "kept out of the body" }), actor: "user:ed" });
    await stores().createMemory({ store, input: createMemorySchema.parse({ path: "ops/no-heading", body: "We rotate the **backup** keys every [quarter](https://x.example).\n\nMore text." }), actor: "user:ed" });
    await stores().putDocuments({
      store,
      input: putDocumentsSchema.parse({ documents: [{ path: "src/retention.ts", content: "import fs from 'node:fs';\nexport const days = 30;\n" }] }),
      actor: "user:ed",
    });
    const titles = await stores().documentTitles({ store, paths: ["memory/ops/retention.md", "memory/ops/no-heading.md", "src/retention.ts", "memory/ops/missing.md"] });
    expect(Object.fromEntries(titles)).toEqual({
      "memory/ops/retention.md": "Retention",
      "memory/ops/no-heading.md": "We rotate the backup keys every quarter.",
      "src/retention.ts": "retention.ts",
    });
  });

  it("cut a long first line at a word, and fall back to the file name for an empty or markup-only text", () => {
    const long = `${"word ".repeat(40)}end`;
    const title = documentTitleOf({ path: "notes/long.md", kind: "markdown", firstChunk: long });
    expect(title.length).toBeLessThanOrEqual(91);
    expect(title.endsWith("word…")).toBe(true);
    expect(documentTitleOf({ path: "pages/banner.html", kind: "markdown", firstChunk: "<h1>x</h1>\n<p>y</p>" })).toBe("banner.html");
    expect(documentTitleOf({ path: "notes/empty.md", kind: "markdown", firstChunk: null })).toBe("empty.md");
  });
});
