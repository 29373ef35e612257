import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { openStore } from "@/lib/stores/stores";
import { drainEmbeddings, searchHere, seedDocument, seedStore, sqliteOnlyCheck, storeSql, useTestBackend, type TestEnv } from "./backend";

// Context for short documents written in sequence (lib/retrieval/context.ts DOCUMENT_CONTEXT): a conversation kept
// one turn per file. The turn that answers a question is often the one after the turn holding the question's words;
// hybrid search brings it, full-text alone answers with the rows that hold the words.

let env: TestEnv;
beforeEach(async () => {
  env = await useTestBackend();
});
afterEach(async () => {
  await env.cleanup();
});

const T0 = Date.UTC(2026, 4, 8, 13, 0);
const TURNS = [
  { path: "chat/t01.md", text: "Caroline: Hi Mel, how was the week with the kids?", at: T0 },
  { path: "chat/t02.md", text: "Melanie: Busy as always! What did you paint last weekend?", at: T0 + 30_000 },
  { path: "chat/t03.md", text: "Caroline: A sunset over the lake, all orange and purple.", at: T0 + 60_000 },
  { path: "chat/t04.md", text: "Melanie: Lovely. We went camping by the river.", at: T0 + 90_000 },
  // Another folder at the same minutes, and the same folder hours later: neither is the conversation's next turn.
  { path: "todo/groceries.md", text: "Buy milk, eggs and a loaf of rye bread.", at: T0 + 45_000 },
  { path: "chat/t90.md", text: "Caroline: The rye bread recipe is on the fridge.", at: T0 + 5 * 3_600_000 },
];
const Q = "what did you paint last weekend";

async function seed(): Promise<void> {
  await seedStore("talk");
  for (const t of TURNS) {
    await seedDocument("talk", t.path, t.text);
    await storeSql("talk", "update documents set mtime = ? where path = ?", [t.at, t.path]);
  }
  await drainEmbeddings(["talk"]);
}

const paths = async (body: Record<string, unknown>) => (await searchHere("talk", { q: Q, ...body })).results.map((h) => h.path);

describe("search over short documents written in sequence", () => {
  it("finds the turn that answers, next to the turn holding the question's words, which the words alone miss", async () => {
    await seed();
    for (const group of ["document", "chunk"]) {
      const found = await paths({ group });
      expect(found[0]).toBe("chat/t02.md");
      // The answer holds none of the query's words: it comes as the context of the turn before it.
      expect(found.slice(0, 3)).toContain("chat/t03.md");
      // Another folder written in between, and the same folder hours later, are not its neighbours.
      expect(found).not.toContain("todo/groceries.md");
      expect(found).not.toContain("chat/t90.md");
      await sqliteOnlyCheck("the SQLite ranking's tuning (context weight 0)", async () => {
        const res = await searchStore({ handle: openStore({ store: "talk" }), core: null, input: searchInputSchema.parse({ q: Q, group }), tuning: { context: { weight: 0 } } });
        expect(res.results.map((h) => h.path)).not.toContain("chat/t03.md");
      });
    }
  });

  it("full-text search answers with the rows that hold the words; explain says where a context row's score came from", async () => {
    await seed();
    expect(await paths({ mode: "fts", match: "any" })).toEqual(["chat/t02.md"]);
    const explained = await searchHere("talk", { q: Q, explain: true, group: "chunk" });
    const answer = explained.results.find((h) => h.path === "chat/t03.md");
    expect(answer?.signals?.why).toMatch(/only [\d.]+ from a neighbouring document's words/);
    // Its snippet is its own text (it holds no word to mark), not an empty line.
    expect(answer?.snippet).toContain("A sunset over the lake");
  });

  it("documents of one instant (a bulk import) are no sequence: no context", async () => {
    await seed();
    await storeSql("talk", "update documents set mtime = ?", [T0]);
    expect(await paths({})).toEqual(["chat/t02.md"]);
  });

  it("a filter applies to the neighbours too", async () => {
    await seed();
    expect(await paths({ prefix: "chat/t02" })).toEqual(["chat/t02.md"]);
  });
});
