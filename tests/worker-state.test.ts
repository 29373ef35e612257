import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getPg } from "@/lib/db/pg";
import { listWorkerStates, registerWorker, WORKER_STALE_MS, type WorkerMode, type WorkerState } from "@/lib/embed/worker-state";
import { testBackend, useTestBackend, type TestEnv } from "./backend";

/** The embed worker rows the store page and health list: a restart does not leave a "stopped" row behind for each run. */
let env: TestEnv;
beforeAll(async () => {
  env = await useTestBackend();
});
afterAll(async () => env?.cleanup());

async function register(workerId: string, mode: WorkerMode, now: number): Promise<void> {
  if (testBackend === "pg") await registerWorker({ handle: await getPg()!, workerId, mode, now });
  else registerWorker({ workerId, mode, now });
}

async function list(now: number): Promise<WorkerState[]> {
  return testBackend === "pg" ? listWorkerStates({ handle: await getPg()!, now }) : listWorkerStates({ now });
}

describe(`embed worker registry (${testBackend})`, () => {
  it("a worker starting replaces the stopped workers of its kind, keeps running ones and other kinds", async () => {
    const t0 = Date.now() - 10 * WORKER_STALE_MS;
    await register("server-run-1", "in_server", t0);
    await register("separate-1", "separate", t0);
    // The server restarts: the first run stopped beating long ago.
    const t1 = t0 + 5 * WORKER_STALE_MS;
    await register("server-run-2", "in_server", t1);
    // A second server process (a replica) starts while the second run still beats.
    await register("server-run-3", "in_server", t1 + 1_000);
    const listed = (await list(t1 + 2_000)).filter((w) => /^(server-run|separate)-/.test(w.workerId)).map((w) => [w.workerId, w.running]);
    expect(listed.sort()).toEqual([
      ["separate-1", false],
      ["server-run-2", true],
      ["server-run-3", true],
    ]);
  });
});
