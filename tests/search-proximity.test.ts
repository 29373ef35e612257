import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ingestDocument } from "@/lib/index/ingest";
import { searchInputSchema, searchStore, type SearchTuning } from "@/lib/index/search";
import { createStore, openStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

// Proximity evidence (lib/index/search.ts PROXIMITY): among passages holding
// the same query words, the one that has them next to each other, in the
// query's order, is the one the user means. bm25 cannot tell: it counts
// words, not where they are, and prefers the shorter text.

let env: ReturnType<typeof useTempDataDir>;
beforeEach(() => {
  env = useTempDataDir();
});
afterEach(() => env.cleanup());

const FILLER = "ledger harbor quartz meadow lantern copper violet summit orchard canyon ember willow granite parcel beacon thistle".split(" ");
const filler = (n: number, offset: number) => Array.from({ length: n }, (_, i) => FILLER[(i * 7 + offset) % FILLER.length]).join(" ");

/** The document about the connection pool's size, and a shorter one that mentions the three words apart. */
const PHRASE = { path: "db/pooling.md", text: "# Database settings\n\nRaise the connection pool size when the service runs more workers.\n" };
const SCATTERED = { path: "ops/deploy.md", text: "# Deploy\n\nEach connection is checked first. The worker pool drains, then the next pool starts. Log size grows.\n" };
const NOTES = Array.from({ length: 8 }, (_, i) => ({ path: `notes/n${i}.md`, text: `# Note ${i}\n\n${filler(40, i)}\n` }));
const NO_PROXIMITY: SearchTuning = { proximity: { weight: 0, window: 5 } };

async function paths(q: string, params: Record<string, unknown>, tuning?: SearchTuning): Promise<string[]> {
  const res = await searchStore({ handle: openStore({ store: "near" }), core: null, input: searchInputSchema.parse({ q, ...params }), tuning });
  return res.results.map((h) => h.path);
}

describe("proximity evidence in search", () => {
  it("ranks the passage with the query's words side by side first, which bm25 alone ranked second", async () => {
    createStore({ input: { name: "near" }, actor: "test" });
    const handle = openStore({ store: "near" });
    for (const d of [PHRASE, SCATTERED, ...NOTES]) ingestDocument({ handle, path: d.path, origin: "api", text: d.text, mtime: 0 });
    const q = "connection pool size";
    for (const params of [{ mode: "fts" }, { mode: "fts", match: "any" }, { mode: "hybrid" }, { mode: "fts", group: "chunk" }, {}]) {
      expect(await paths(q, params, NO_PROXIMITY)).toEqual([SCATTERED.path, PHRASE.path]);
      expect(await paths(q, params)).toEqual([PHRASE.path, SCATTERED.path]);
    }
    // Explain says why.
    const explained = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, mode: "fts", explain: true }) });
    expect(explained.results[0].signals?.why).toMatch(/100% of adjacent word pairs near each other/);
    expect(explained.results[1].signals?.why).toMatch(/0% of adjacent word pairs near each other/);
  });
});
