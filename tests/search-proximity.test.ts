import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { searchInputSchema, searchStore, type SearchTuning } from "@/lib/index/search";
import { openStore } from "@/lib/stores/stores";
import { searchHere, seedDocument, seedStore, sqliteOnlyCheck, useTestBackend, type TestEnv } from "./backend";

// Proximity evidence (lib/index/search.ts PROXIMITY): among passages holding
// the same query words, the one that has them next to each other, in the
// query's order, is the one the user means. bm25 cannot tell: it counts
// words, not where they are, and prefers the shorter text.

let env: TestEnv;
beforeEach(async () => {
  env = await useTestBackend();
});
afterEach(async () => {
  await env.cleanup();
});

const FILLER = "ledger harbor quartz meadow lantern copper violet summit orchard canyon ember willow granite parcel beacon thistle".split(" ");
const filler = (n: number, offset: number) => Array.from({ length: n }, (_, i) => FILLER[(i * 7 + offset) % FILLER.length]).join(" ");

/** The document about the connection pool's size, and a shorter one that mentions the three words apart. */
const PHRASE = { path: "db/pooling.md", text: "# Database settings\n\nRaise the connection pool size when the service runs more workers.\n" };
const SCATTERED = { path: "ops/deploy.md", text: "# Deploy\n\nEach connection is checked first. The worker pool drains, then the next pool starts. Log size grows.\n" };
const NOTES = Array.from({ length: 8 }, (_, i) => ({ path: `notes/n${i}.md`, text: `# Note ${i}\n\n${filler(40, i)}\n` }));
const NO_PROXIMITY: SearchTuning = { proximity: { weight: 0, window: 5 } };

async function paths(q: string, params: Record<string, unknown>): Promise<string[]> {
  return (await searchHere("near", { q, ...params })).results.map((h) => h.path);
}

async function seed(): Promise<void> {
  await seedStore("near");
  for (const d of [PHRASE, SCATTERED, ...NOTES]) await seedDocument("near", d.path, d.text);
}

describe("proximity evidence in search", () => {
  it("ranks the passage with the query's words side by side first, which bm25 alone ranked second", async () => {
    await seed();
    const q = "connection pool size";
    for (const params of [{ mode: "fts" }, { mode: "fts", match: "any" }, { mode: "hybrid" }, { mode: "fts", group: "chunk" }, {}]) {
      await sqliteOnlyCheck("bm25 without the proximity factor (a SearchTuning of the SQLite ranking)", async () => {
        const res = await searchStore({ handle: openStore({ store: "near" }), core: null, input: searchInputSchema.parse({ q, ...params }), tuning: NO_PROXIMITY });
        expect(res.results.map((h) => h.path)).toEqual([SCATTERED.path, PHRASE.path]);
      });
      // What the user relies on, on both backends: the passage that says "connection pool size" comes first.
      expect(await paths(q, params)).toEqual([PHRASE.path, SCATTERED.path]);
    }
  });

  it("explain says why: the share of the query's adjacent word pairs found near each other", async () => {
    await seed();
    const explained = await searchHere("near", { q: "connection pool size", mode: "fts", explain: true });
    expect(explained.results[0].signals?.why).toMatch(/100% of adjacent word pairs near each other/);
    expect(explained.results[1].signals?.why).toMatch(/0% of adjacent word pairs near each other/);
  });
});
