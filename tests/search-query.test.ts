import { describe, expect, it } from "vitest";
import { commonSearchQuery, searchInputSchema } from "@/lib/index/search";

// The search route parses its common query shape without zod (lib/index/search.ts commonSearchQuery); whatever it
// takes must parse to the very object the schema gives, and whatever the schema refuses must go to the schema.
const TAKEN: Record<string, string | string[]>[] = [
  { q: "item4242", mode: "fts", limit: "10" },
  { q: "restore drill" },
  { q: "  padded  ", mode: "hybrid", group: "chunk", match: "any", syntax: "fts5", limit: "100", offset: "10000" },
  { q: "a", limit: "1", offset: "0", mode: "vector", group: "document", match: "all", syntax: "plain" },
  { offset: "7", q: "x".repeat(2000), limit: "20" },
];
const TO_THE_SCHEMA: Record<string, string | string[]>[] = [
  // Refused by the schema: its 4xx.
  {},
  { q: "" },
  { q: "   " },
  { q: "x".repeat(2001) },
  { q: "x", limit: "0" },
  { q: "x", limit: "101" },
  { q: "x", limit: "1.5" },
  { q: "x", offset: "10001" },
  { q: "x", offset: "-1" },
  { q: "x", mode: "telepathy" },
  { q: "x", group: "page" },
  { q: "x", unknown: "1" },
  { q: "x", toString: "1" },
  { q: ["a", "b"] },
  { q: "x", mode: ["fts", "fts"] },
  // Valid, but not the common shape: the schema parses them.
  { q: "x", limit: "010" },
  { q: "x", limit: " 10" },
  { q: "x", explain: "true" },
  { q: "x", kind: "memory,code" },
  { q: "x", prefix: "docs/" },
  { q: "x", w_fts: "2" },
];

describe("the search route's query parse", () => {
  it("gives the schema's own object, key for key and in order, for the common shape", () => {
    for (const raw of TAKEN) {
      const fast = commonSearchQuery(raw);
      expect(fast, JSON.stringify(raw)).not.toBeNull();
      const parsed = searchInputSchema.parse(raw);
      expect(JSON.stringify(fast)).toBe(JSON.stringify(parsed));
      expect(fast).toEqual(parsed);
    }
  });

  it("leaves everything else to the schema, so a refused query answers the schema's 4xx", () => {
    for (const raw of TO_THE_SCHEMA) expect(commonSearchQuery(raw), JSON.stringify(raw)).toBeNull();
    // The refused ones really are refused (a 400 naming the field), the rest parse.
    expect(TO_THE_SCHEMA.slice(0, 15).every((raw) => !searchInputSchema.safeParse(raw).success)).toBe(true);
    expect(TO_THE_SCHEMA.slice(15).every((raw) => searchInputSchema.safeParse(raw).success)).toBe(true);
  });
});
