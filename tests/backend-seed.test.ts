import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stores } from "@/lib/stores/backend";
import { governance } from "@/lib/backend/governance";
import { onPg, principalOf, searchHere, seedDocument, seedStore, seedTokens, useTestBackend, type TestEnv } from "./backend";

/**
 * The backend fixture's seed (tests/backend.ts): every test starts from what the seed wrote and its answer, and
 * from nothing another test wrote; on PostgreSQL the seed runs once, into the template the tests' databases copy.
 */
let seedRuns = 0;
const seed = async () => {
  seedRuns++;
  await seedStore("seeded", "made by the seed");
  await seedDocument("seeded", "from-seed.md", "# Seeded\n\nlanterns in the seed");
  return seedTokens({ writer: { label: "w", agent_id: "seed-writer", scopes: ["write"] } });
};

describe("a file's seed", () => {
  let env: TestEnv & { seeded: { writer: string } };
  beforeEach(async () => {
    env = await useTestBackend({}, { seed });
  });
  afterEach(() => env.cleanup());

  for (const n of [1, 2]) {
    it(`test ${n} starts from the seed's store, document and token, and from no other test's writes`, async () => {
      expect((await stores().listStores()).map((s) => s.name)).toContain("seeded");
      expect((await principalOf(env.seeded.writer)).agentId).toBe("seed-writer");
      const found = (await searchHere("seeded", { q: "lanterns", mode: "fts" })).results.map((r: { path: string }) => r.path);
      // Each test writes one document and one store: the other test's must not be here.
      expect(found).toEqual(["from-seed.md"]);
      expect((await stores().listStores()).map((s) => s.name).filter((s) => s.startsWith("written-by-"))).toEqual([]);
      await seedDocument("seeded", `test-${n}.md`, "# Written\n\nlanterns in a test");
      await seedStore(`written-by-${n}`);
      expect((await governance().listApiTokens({})).filter((t) => t.agent_id === "seed-writer")).toHaveLength(1);
    });
  }

  it("runs for every test on SQLite, once for the file on PostgreSQL", () => {
    expect(seedRuns).toBe(onPg ? 1 : 3);
  });
});
