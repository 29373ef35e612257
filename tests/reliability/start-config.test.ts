import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ensureProductionBuild, freePort } from "../fixtures/next-server";
import { NEXT_BIN, ROOT } from "../../scripts/build-freshness";

/**
 * `npm start` checks the configuration before it serves; `next start` run directly (as a container image might) goes
 * through the instrumentation hook only. Either way an invalid setting must stop the server with the variable named —
 * not leave one that says it is ready and answers every request with a bare 500.
 */
describe("next start with an invalid setting", () => {
  it("exits non-zero naming the variable and what it accepts, and never serves", async () => {
    ensureProductionBuild();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dm-start-config-"));
    const port = await freePort();
    const child = spawn(process.execPath, [NEXT_BIN, "start", "-H", "127.0.0.1", "-p", String(port)], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, DATA_DIR: dataDir, DUALMIND_EMBED_WORKER: "off", NEXT_TELEMETRY_DISABLED: "1" },
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const answers: number[] = [];
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    // Ask while it starts: no request may be answered before it stops (the first answer ends the wait: it failed).
    let done = false;
    void exited.then(() => (done = true));
    while (!done && answers.length === 0) {
      const status = await fetch(`http://127.0.0.1:${port}/api/v1/health`).then((r) => r.status, () => 0);
      if (status !== 0) answers.push(status);
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!done) child.kill("SIGKILL");
    expect(answers).toEqual([]);
    expect(await exited).toBe(1);
    expect(stderr).toContain("DUALMIND_EMBED_WORKER");
    expect(stderr).toContain("Invalid configuration");
    expect(stderr).toMatch(/expected one of .*"true"/);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
});
