import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { bootstrapApp } from "@/lib/bootstrap";
import { getGovernance, getStoreDb } from "@/lib/db/connection";
import { POSTGRES_MARKER_FILE } from "@/lib/db/deployment-marker";
import { closePg } from "@/lib/db/pg";
import { stores } from "@/lib/stores/backend";
import { restartWith, useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";
import { patience } from "../fixtures/patience";

let env: ReturnType<typeof useTempDataDir> | undefined;
afterEach(async () => {
  await closePg();
  env?.cleanup();
  env = undefined;
});

describe("PostgreSQL mode keeps no state of its own in DATA_DIR", () => {
  it("creates no governance.db and no local store, marks the data dir, and a start without DATABASE_URL refuses it", async () => {
    const url = await createTestDatabase();
    env = useTempDataDir({ DATABASE_URL: url });
    await bootstrapApp();
    expect(await stores().listStoreNames()).toEqual(expect.arrayContaining(["core", "default"]));
    const entries = fs.readdirSync(env.dataDir);
    expect(entries).toContain(POSTGRES_MARKER_FILE);
    expect(entries).not.toContain("governance.db");
    expect(entries).not.toContain("stores");

    // The replica restarted without the variable: refused, naming it, and nothing local is created.
    await closePg();
    restartWith({ DATABASE_URL: undefined });
    await expect(bootstrapApp()).rejects.toThrow(/DATABASE_URL: is not set, but DATA_DIR .* belongs to a PostgreSQL deployment/);
    expect(() => getGovernance()).toThrow(/DATABASE_URL/);
    expect(() => getStoreDb({ store: "default" })).toThrow(/DATABASE_URL/);
    const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: "production", DATA_DIR: env.dataDir },
      timeout: 60_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/DATABASE_URL: is not set/);
    expect(fs.readdirSync(env.dataDir)).not.toContain("governance.db");
    expect(fs.readdirSync(env.dataDir)).not.toContain("stores");
  }, patience(120_000));
});
