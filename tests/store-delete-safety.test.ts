import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runCli } from "@/scripts/cli-kit";
import { indexCommands } from "@/scripts/commands/index-commands";
import { storeCommands } from "@/scripts/commands/store-commands";
import { GET as listStoresRoute, POST as createStoreRoute } from "@/app/api/v1/stores/route";
import { DELETE as deleteStoreRoute, GET as getStoreRoute } from "@/app/api/v1/stores/[store]/route";
import { stores } from "@/lib/stores/backend";
import { onPg, principalOf, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/**
 * Deleting a store safely: the name repeated to confirm, the name taken out
 * of token allow-lists (a name can be made again), the folders a failed
 * removal leaves cleaned, and names that would share a folder refused.
 */
let env: TestEnv;
const tok = { admin: "" };

beforeAll(async () => {
  env = await useTestBackend();
  tok.admin = await seedToken({ label: "a", agent_id: "del-admin", scopes: ["admin"] });
});
afterAll(async () => env?.cleanup());

const del = (store: string, confirm?: string) =>
  callRoute(deleteStoreRoute, { method: "DELETE", token: tok.admin, params: { store }, url: `http://x/api/v1/stores/${store}${confirm === undefined ? "" : `?confirm=${confirm}`}` });

describe("delete", () => {
  it("needs the store's name repeated (confirm); without it nothing is removed", async () => {
    await seedStore("shed");
    const bare = await del("shed");
    expect(bare.status).toBe(422);
    expect(bare.json.error.message).toContain("confirm=shed");
    expect((await del("shed", "default")).status).toBe(422);
    expect((await callRoute(getStoreRoute, { token: tok.admin, params: { store: "shed" } })).status).toBe(200);
    expect((await del("shed", "shed")).json).toEqual({ deleted: "shed" });
  });

  it("takes the name out of token allow-lists: a token allowed the old store never reaches a new one of that name", async () => {
    await seedStore("vault");
    const limited = await seedToken({ label: "v", agent_id: "vault-reader", scopes: ["read"], stores: ["vault", "default"] });
    expect((await callRoute(getStoreRoute, { token: limited, params: { store: "vault" } })).status).toBe(200);
    expect((await del("vault", "vault")).status).toBe(200);
    await seedStore("vault");
    expect((await callRoute(getStoreRoute, { token: limited, params: { store: "vault" } })).status).toBe(403);
    // Its other store is still allowed; the list is not widened.
    expect((await callRoute(getStoreRoute, { token: limited, params: { store: "default" } })).status).toBe(200);
    expect((await principalOf(limited)).stores).toEqual(["default"]);
  });

  it("a token whose only store was deleted is allowed no store at all (not every store)", async () => {
    await seedStore("hut");
    const only = await seedToken({ label: "h", agent_id: "hut-reader", scopes: ["read"], stores: ["hut"] });
    expect((await del("hut", "hut")).status).toBe(200);
    expect((await principalOf(only)).stores).toEqual([]);
    expect((await callRoute(getStoreRoute, { token: only, params: { store: "default" } })).status).toBe(403);
    expect((await callRoute(listStoresRoute, { token: only })).json.stores).toEqual([]);
  });
});

describe.skipIf(onPg)("store folders", () => {
  it("a folder a failed delete left behind is removed at the next delete (and at start-up)", async () => {
    const leftover = path.join(env.dataDir, "stores", ".deleted-ghost-0123456789ab");
    fs.mkdirSync(path.join(leftover, "memory"), { recursive: true });
    fs.writeFileSync(path.join(leftover, "index.db"), "x".repeat(4096));
    await seedStore("porch");
    expect((await del("porch", "porch")).status).toBe(200);
    expect(fs.existsSync(leftover)).toBe(false);
    fs.mkdirSync(leftover);
    await stores().ensureStartupStores();
    expect(fs.existsSync(leftover)).toBe(false);
  });

  it("verify names a deleted store's folder not yet removed (exit 1)", async () => {
    const leftover = path.join(env.dataDir, "stores", ".deleted-ghost-fedcba987654");
    fs.mkdirSync(leftover);
    const verified = await cli("verify", "core");
    expect(verified.code).toBe(1);
    expect(verified.out).toContain("stores/.deleted-ghost-fedcba987654");
    fs.rmdirSync(leftover);
    expect((await cli("verify", "core")).code).toBe(0);
  });

  it("a name that differs from a store folder only by case is refused (one folder on a case-insensitive file system)", async () => {
    fs.mkdirSync(path.join(env.dataDir, "stores", "Notes", "memory"), { recursive: true });
    const made = await callRoute(createStoreRoute, { token: tok.admin, body: { name: "notes" } });
    expect(made.status).toBe(409);
    expect(made.json.error.message).toContain("Notes");
    // Names themselves are lower case: `Notes` is not a store name.
    expect((await callRoute(createStoreRoute, { token: tok.admin, body: { name: "Notes" } })).status).toBe(400);
  });
});

/** `dualmind <argv>` in this process: its output and exit code. */
async function cli(...argv: string[]): Promise<{ code: number; out: string }> {
  let out = "";
  const spies = [process.stdout, process.stderr].map((s) => vi.spyOn(s, "write").mockImplementation((chunk) => ((out += String(chunk)), true)));
  try {
    return { code: await runCli([...storeCommands, ...indexCommands], argv), out };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

describe("the CLI", () => {
  it("deletes a store only with --confirm repeating its name, and archives and unarchives one", async () => {
    await seedStore("crate");
    const bare = await cli("stores", "delete", "crate");
    expect(bare.code).not.toBe(0);
    expect(bare.out).toContain("confirm=crate");
    expect((await cli("stores", "archive", "crate")).code).toBe(0);
    expect((await cli("stores", "list")).out).toMatch(/^crate \(archived\)\t/m);
    expect((await cli("stores", "unarchive", "crate")).code).toBe(0);
    expect((await cli("stores", "delete", "crate", "--confirm", "crate")).code).toBe(0);
    expect((await stores().listStoreNames())).not.toContain("crate");
  });
});
