import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

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

/** Serving with DATABASE_URL is tested over HTTP in http-replicas.test.ts; here, the refusal before serving. */
describe("npm start with DATABASE_URL", () => {
  it("reports an unreachable server as a migration failure, not a crash trace", async () => {
    const r = start({ DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("could not migrate the PostgreSQL database in DATABASE_URL");
  });
});
