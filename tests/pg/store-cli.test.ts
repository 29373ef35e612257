import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetConfigForTests } from "@/lib/config";
import { closePg, getPg } from "@/lib/db/pg";
import { createMemoryPg } from "@/lib/index/memories-pg";
import { createStorePg, openStorePg } from "@/lib/stores/engines/pg";
import type { CommandContext } from "@/scripts/cli-kit";
import { memoryCommands } from "@/scripts/commands/memory-commands";
import { createTestDatabase } from "./helpers";

let tmp: string;
beforeAll(async () => {
  process.env.DATABASE_URL = await createTestDatabase();
  resetConfigForTests();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dm-pg-cli-"));
});
afterAll(async () => {
  await closePg();
  delete process.env.DATABASE_URL;
  resetConfigForTests();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function run(name: string, flags: Record<string, string | boolean>) {
  const outs: { human: string; data: unknown }[] = [];
  const ctx: CommandContext = { args: [], flags, json: false, out: (human, data) => outs.push({ human, data }) };
  const code = (await memoryCommands.find((c) => c.name === name)!.run(ctx)) ?? 0;
  return { code, human: outs.map((o) => o.human).join("\n"), data: outs[0]?.data };
}

describe("memories export / import on the CLI with DATABASE_URL", () => {
  it("exports a store's memories to a folder and imports them into another store", async () => {
    const pg = await getPg()!;
    await createStorePg({ pg, input: { name: "team" }, actor: "test" });
    await createStorePg({ pg, input: { name: "copy" }, actor: "test" });
    await createMemoryPg({ handle: await openStorePg({ pg, store: "team" }), input: { path: "runbooks/restart", body: "Restart the worker, then watch the backlog." }, actor: "test" });

    const dir = path.join(tmp, "export");
    const exported = await run("memories export", { store: "team", out: dir });
    expect(exported.code).toBe(0);
    expect(exported.human).toContain("exported 1 memories");
    expect(fs.readFileSync(path.join(dir, "runbooks", "restart.md"), "utf8")).toContain("Restart the worker, then watch the backlog.");

    const imported = await run("memories import", { store: "copy", from: dir });
    expect(imported).toMatchObject({ code: 0, data: { added: 1, skipped: [] } });
    await expect(run("memories import", { store: "ghost", from: dir })).rejects.toMatchObject({ code: "not_found" });
    await expect(run("memories export", { store: "team" })).rejects.toThrow(/--out are required/);
  });

  it("never overwrites a same-named file with other content unless --force", async () => {
    const pg = await getPg()!;
    await createStorePg({ pg, input: { name: "ops" }, actor: "test" });
    await createMemoryPg({ handle: await openStorePg({ pg, store: "ops" }), input: { path: "runbooks/deploy", body: "Deploy on Tuesdays." }, actor: "test" });
    const dir = path.join(tmp, "ops-export");
    await run("memories export", { store: "ops", out: dir });
    // Someone edits the exported file (not imported yet), and a file of their own sits beside it.
    const file = path.join(dir, "runbooks", "deploy.md");
    const edited = fs.readFileSync(file, "utf8").replace("Tuesdays", "Thursdays");
    fs.writeFileSync(file, edited);
    fs.writeFileSync(path.join(dir, "runbooks", "mine.md"), "my notes");

    await expect(run("memories export", { store: "ops", out: dir })).rejects.toMatchObject({ code: "conflict", message: expect.stringMatching(/1 file\(s\) .* differ .*runbooks\/deploy\.md.*--force/) });
    expect(fs.readFileSync(file, "utf8")).toBe(edited);

    const forced = await run("memories export", { store: "ops", out: dir, force: true });
    expect(forced).toMatchObject({ code: 0, data: { written: 1, overwritten: 1 } });
    expect(fs.readFileSync(file, "utf8")).toContain("Deploy on Tuesdays.");
    expect(fs.readFileSync(path.join(dir, "runbooks", "mine.md"), "utf8")).toBe("my notes");
  });
});
