/**
 * The CLI's graph commands with DATABASE_URL: think, nodes, remember and
 * sweep read and write the store's PostgreSQL schema (through graphBackend(),
 * as the routes and MCP tools do), never a local index.db the PostgreSQL
 * stores do not see.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePg, getPg } from "@/lib/db/pg";
import { graphBackend } from "@/lib/graph/backend";
import { setWorkingMemoryPg } from "@/lib/graph/working-memory-pg";
import { drainEmbedQueuesPg } from "@/lib/index/embed-queue-pg";
import { createStorePg, openStorePg } from "@/lib/stores/stores-pg";
import type { CommandContext } from "@/scripts/cli-kit";
import { graphCommands } from "@/scripts/commands/graph-commands";
import { useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

let env: ReturnType<typeof useTempDataDir>;
beforeAll(async () => {
  env = useTempDataDir({ DATABASE_URL: await createTestDatabase() });
  await createStorePg({ pg: (await getPg())!, input: { name: "ops" }, actor: "test" });
});
afterAll(async () => {
  await closePg();
  env.cleanup();
});

async function run(name: string, args: string[], flags: CommandContext["flags"] = {}) {
  const outs: { human: string; data: unknown }[] = [];
  const ctx: CommandContext = { args, flags, json: false, out: (human, data) => outs.push({ human, data }) };
  const code = (await graphCommands.find((c) => c.name === name)!.run(ctx)) ?? 0;
  return { code, human: outs.map((o) => o.human).join("\n"), data: outs[0]?.data as Record<string, unknown> };
}

describe("the graph commands with DATABASE_URL", () => {
  it("think writes a thought to PostgreSQL, nodes lists the store's nodes, remember finds both, lexically and then by vector", async () => {
    const thought = await run("graph think", ["ops", "Rotating", "the", "TLS", "certificate", "needs", "an", "nginx", "reload"], { chain: "tls" });
    expect(thought.code).toBe(0);
    expect(thought.human).toMatch(/^thought \S+ \(tls #1\)$/);
    // It is in the store's PostgreSQL schema, where the API reads it.
    expect((await graphBackend().getThought({ store: "ops", id: thought.data.id as string })).content).toBe("Rotating the TLS certificate needs an nginx reload");

    await graphBackend().createNode({ store: "ops", actor: "test", input: { name: "nginx", entity_type: "tool" } });
    await graphBackend().createNode({ store: "ops", actor: "test", input: { name: "sourdough", entity_type: "concept" } });
    const nodes = await run("graph nodes", ["ops"], { q: "nginx" });
    expect(nodes.human).toMatch(/^\S+\ttool\tnginx$/);
    expect((await run("graph nodes", ["ops"], { type: "concept" })).human).toMatch(/\tconcept\tsourdough$/);

    // Before the embed worker has run, remember answers by full text and says why.
    const waiting = await run("graph remember", ["ops", "nginx", "certificate", "reload"]);
    expect(waiting.human).toMatch(/^mode fts \(fallback: backlog: /);
    expect(waiting.human).toContain("\tthought\tRotating the TLS certificate");
    expect(waiting.human).toContain("\ttool\tnginx\t");
    await drainEmbedQueuesPg({ handles: [await openStorePg({ pg: (await getPg())!, store: "ops" })] });
    const ready = await run("graph remember", ["ops", "nginx", "certificate", "reload"], { limit: "1" });
    expect(ready.human.split("\n")[0]).toMatch(/^mode vector\+fts; score = /);
    expect(ready.data.results).toHaveLength(1);

    // Nothing went to a local SQLite store.
    expect(fs.existsSync(path.join(env.dataDir, "stores", "ops"))).toBe(false);
  });

  it("sweep deletes the store's expired working-memory keys in PostgreSQL and keeps the live ones", async () => {
    const handle = await openStorePg({ pg: (await getPg())!, store: "ops" });
    await setWorkingMemoryPg({ handle, actor: "test", input: { key: "live", value: 2 } });
    // Written a minute ago with a one-second TTL: expired now (written last, as a write sweeps first).
    await setWorkingMemoryPg({ handle, actor: "test", input: { key: "old", value: 1, ttl_seconds: 1 }, now: Date.now() - 60_000 });
    expect(await run("graph sweep", ["ops"])).toMatchObject({ code: 0, human: "swept 1 expired key", data: { swept: 1 } });
    expect((await run("graph sweep", ["ops"])).human).toBe("swept 0 expired keys");
    expect((await graphBackend().listWorkingMemory({ store: "ops" })).map((e) => e.key)).toEqual(["live"]);
  });

  it("an unknown store is not_found, and a missing store name a usage error", async () => {
    await expect(run("graph think", ["ghost", "hello"])).rejects.toMatchObject({ code: "not_found" });
    await expect(run("graph nodes", [])).rejects.toThrow(/store name is required/);
  });
});
