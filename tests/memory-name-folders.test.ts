import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as createMemory } from "@/app/api/v1/stores/[store]/memories/route";
import { seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/** A memory's category folder can never be named like a memory's file: on disk, memory/a/b.md is one or the other. */
let env: TestEnv;
let writer = "";

beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("names");
  writer = await seedToken({ label: "w", agent_id: "namer", scopes: ["write"] });
});
afterAll(async () => env?.cleanup());

const create = (path: string) => callRoute(createMemory, { token: writer, params: { store: "names" }, body: { path, body: "words\n" } });

describe("a category named like a memory's file", () => {
  it("is refused with 400 naming the rule, whichever was written first, never a 500", async () => {
    expect((await create("a/b")).status).toBe(201);
    for (const path of ["a/b.md/c", "a/B.MD/c", "x/y.md/z"]) {
      const r = await create(path);
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(JSON.stringify(r.json)).toContain("must not end in '.md'");
    }
    // The memory x/y was never made by the refused x/y.md/z: it is free.
    expect((await create("x/y")).status).toBe(201);
    // A memory's own name may end in .md-like text: its file is <slug>.md.
    expect((await create("x/notes.md")).status).toBe(201);
  });
});
