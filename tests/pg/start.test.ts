import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { describe, expect, it } from "vitest";
import { createTestDatabase } from "./helpers";

function start(env: Record<string, string>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-pgstart-"));
  try {
    const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: "production", DATA_DIR: dataDir, ...env },
      timeout: 60_000,
    });
    return { ...r, dataDirEntries: fs.readdirSync(dataDir) };
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

describe("npm start with DATABASE_URL", () => {
  it("applies the PostgreSQL migrations, then says serving from PostgreSQL is not available yet, instead of quietly using SQLite", async () => {
    const url = await createTestDatabase();
    const r = start({ DATABASE_URL: url });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("not available yet");
    expect(r.stderr).toContain("unset DATABASE_URL");
    // No SQLite governance.db was made behind the user's back.
    expect(r.dataDirEntries).not.toContain("governance.db");
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      const v = (await c.query<{ value: string }>("select value from meta where key = 'schema_version'")).rows[0]?.value;
      expect(v).toMatch(/^\d{4}_/);
    } finally {
      await c.end();
    }
  });

  it("reports an unreachable server as a migration failure, not a crash trace", async () => {
    const r = start({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("could not migrate the PostgreSQL database in DATABASE_URL");
  });
});
