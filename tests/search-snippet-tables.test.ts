import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemorySchema } from "@/lib/index/memories";
import { searchInputSchema } from "@/lib/index/search";
import { stripTableSyntax } from "@/lib/retrieval/snippet-tables";
import { stores } from "@/lib/stores/backend";
import { seedStore, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;
const store = "tables";

beforeEach(async () => {
  env = await useTestBackend();
  await seedStore(store);
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
