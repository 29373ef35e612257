import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getGovernance, getStoreDb } from "@/lib/db/connection";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { MAX_EMBED_ATTEMPTS, processEmbedBatch, startEmbedWorker } from "@/lib/embed/worker";
import { WORKER_STALE_MS } from "@/lib/embed/worker-state";
import { runStatusWatchPass, storeHealthReportFor } from "@/lib/metrics/health";
import { stores } from "@/lib/stores/backend";
import { startStoresEmbedWorkerPg } from "@/lib/stores/engines/pg";
import { startFakeOpenAI } from "../fixtures/fake-openai-server";
import { asAnotherReplica, embedOneBatch, governanceSql, onPg, seedStore, storeSql, useTestBackend, type TestEnv } from "../backend";
import { recordTally } from "./summary";

/**
 * The embed queue heals itself (both backends unless said otherwise), with
 * the real openai client against a local OpenAI-compatible stand-in:
 * - a provider outage holds the queue without spending attempts, and it
 *   drains by itself when the provider answers (nobody calls retry-parked);
 * - a provider slower than the query timeout is waited for: each text is
 *   sent once;
 * - a worker process killed with -9 mid-batch: health says its claims are
 *   stale, and the next worker on this host releases them at start;
 * - two replicas on PostgreSQL report one provider state: one outage is one
 *   status change and one alert;
 * - a full disk (a real tmpfs; SQLite) holds the queue; it drains once space returns.
 */
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let env: TestEnv;
const tally = { faultsInjected: 0, faultsSurvived: 0, writesAcknowledged: 0, writesFound: 0 };
const ENV = {
  DUALMIND_EMBED_PROVIDER: "openai",
  DUALMIND_EMBED_MODEL: "fake",
  DUALMIND_EMBED_DIM: "32",
  DUALMIND_EMBED_TIMEOUT_MS: "1000",
  DUALMIND_EMBED_BATCH_SIZE: "4",
  DUALMIND_EMBED_OUTAGE_MAX_BACKOFF_MS: "400",
};

beforeAll(async () => {
  fake = await startFakeOpenAI({ dimension: 32 });
  env = await useTestBackend({ ...ENV, DUALMIND_EMBED_BASE_URL: fake.baseUrl });
  resetEmbedderForTests();
  await getEmbedder().fingerprint;
});
afterAll(async () => {
  recordTally("embed queue heals itself (outage, slow provider, killed worker, replicas)", tally);
  resetEmbedderForTests();
  await env?.cleanup();
  await fake.close();
});

async function until(what: string, cond: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The worker loop as the server runs it, for this backend. */
function runWorker(): { stop: () => Promise<void> } {
  const ctl = new AbortController();
  const done = onPg ? startStoresEmbedWorkerPg({ signal: ctl.signal, idleMs: 50 }) : startEmbedWorker({ signal: ctl.signal, idleMs: 50 });
  return {
    stop: async () => {
      ctl.abort();
      await done;
    },
  };
}

const queue = async (store: string) =>
  (await storeSql<{ pending: number; parked: number; attempts: number }>(
    store,
    "select cast(count(*) - count(parked_at) as integer) as pending, cast(count(parked_at) as integer) as parked, cast(coalesce(max(attempts), 0) as integer) as attempts from embed_queue",
  ))[0];
const vectors = async (store: string) => Number((await storeSql<{ n: number }>(store, `select count(*) as n from ${onPg ? "chunk_embeddings" : "embeddings"}`))[0].n);

async function putNotes(store: string, n: number, tag: string): Promise<string[]> {
  await seedStore(store);
  const docs = Array.from({ length: n }, (_, i) => ({ path: `n/${i}.md`, content: `# ${tag} ${i}\n\n${tag} drill note number ${i}` }));
  await stores().putDocuments({ store, input: { documents: docs }, actor: "test" });
  tally.writesAcknowledged += n;
  return (await storeSql<{ text: string }>(store, "select text from chunks")).map((r) => r.text);
}

it("a provider outage (connection drops, then 500s) parks nothing and spends no attempts; when it answers the backlog drains by itself", async () => {
  const texts = await putNotes("outage", 10, "outage");
  fake.state.requests.length = 0;
  fake.state.defaultMode = "reset";
  tally.faultsInjected++;
  const worker = runWorker();
  try {
    // Long enough that the old rules (every failure an attempt) would have parked everything several times over.
    await until("the worker met the outage a few times", async () => fake.state.requests.length >= 4);
    fake.state.defaultMode = "500";
    const seen = fake.state.requests.length;
    await until("more probes during the 500s", async () => fake.state.requests.length >= seen + 2 * MAX_EMBED_ATTEMPTS);
    expect(await queue("outage")).toEqual({ pending: texts.length, parked: 0, attempts: 0 });
    // While the queue is held only the probe is sent, not the backlog again and again.
    const itemTextsSent = fake.state.requests.slice(seen).flatMap((r) => r.input).filter((t) => texts.includes(t));
    expect(itemTextsSent).toEqual([]);
    expect((await storeHealthReportFor({ store: "outage", principal: "operator" })).status).toBe("provider_down");

    fake.state.defaultMode = "ok";
    await until("the backlog drained", async () => (await queue("outage")).pending === 0);
    expect(await queue("outage")).toEqual({ pending: 0, parked: 0, attempts: 0 });
    expect(await vectors("outage")).toBe(texts.length);
    await until("health says healthy", async () => (await storeHealthReportFor({ store: "outage", principal: "operator" })).status === "healthy");
    tally.faultsSurvived++;
    tally.writesFound += texts.length;
  } finally {
    fake.state.defaultMode = "ok";
    await worker.stop();
  }
});

it("a provider slower than the query timeout is waited for: each text is sent once", async () => {
  const texts = await putNotes("slow", 8, "slow");
  fake.state.requests.length = 0;
  // Slower than DUALMIND_EMBED_TIMEOUT_MS (1 s, a query's wait), well within the worker's.
  fake.state.delayMs = 1_500;
  tally.faultsInjected++;
  const worker = runWorker();
  try {
    await until("the slow provider's vectors are written", async () => (await queue("slow")).pending === 0);
  } finally {
    fake.state.delayMs = 0;
    await worker.stop();
  }
  const sent = fake.state.requests.flatMap((r) => r.input).filter((t) => texts.includes(t));
  expect(sent.sort()).toEqual([...texts].sort());
  expect(await queue("slow")).toEqual({ pending: 0, parked: 0, attempts: 0 });
  expect(await vectors("slow")).toBe(texts.length);
  tally.faultsSurvived++;
  tally.writesFound += texts.length;
});

it("a worker process killed with -9 mid-batch: health says its claims are stale, and the next worker on this host releases them at start", async () => {
  const texts = await putNotes("killed", 6, "killed");
  // The child's model probe is answered; its batch never is, so it dies holding its claims.
  fake.state.hangOn = /killed drill/;
  tally.faultsInjected++;
  // node itself (tsx as a loader, not its CLI wrapper): the pid killed is the worker's.
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/worker.ts"], {
    env: { ...process.env, DATA_DIR: env.dataDir, DUALMIND_EMBED_BASE_URL: fake.baseUrl, ...ENV, ...(env.databaseUrl ? { DATABASE_URL: env.databaseUrl } : {}) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c) => (stderr += String(c)));
  child.stdout!.on("data", (c) => (stderr += String(c)));
  const claimedByChild = async () =>
    (await storeSql<{ n: number; until: number | string | null }>("killed", "select cast(count(*) as integer) as n, max(claimed_until) as until from embed_queue where claimed_by like ?", [`%-${child.pid}-%`]))[0];
  try {
    await until(`the child worker claimed a batch (${stderr.slice(-300)})`, async () => (await claimedByChild()).n > 0, 90_000);
  } catch (e) {
    child.kill("SIGKILL");
    fake.state.hangOn = null;
    throw e;
  }
  const held = await claimedByChild();
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));
  fake.state.hangOn = null;
  // The lease would hold them for minutes.
  expect(Number(held.until)).toBeGreaterThan(Date.now() + 120_000);

  // SQLite: this host sees the process is gone at once. PostgreSQL: every replica judges by the shared worker registry,
  // so once the dead worker's heartbeat is stale. The worker is dead and beats no more: its last beat is moved back by
  // the stale window, as waiting that long would leave it (the window itself is tests/worker-state.test.ts's).
  if (onPg) await governanceSql("update embed_workers set heartbeat_at = heartbeat_at - ? where pid = ?", [WORKER_STALE_MS, child.pid]);
  await until("health says the claims are stale", async () => (await storeHealthReportFor({ store: "killed", principal: "operator" })).status === "stalled", 90_000);
  const report = await storeHealthReportFor({ store: "killed", principal: "operator" });
  expect(report.status_reason).toMatch(new RegExp(`${held.n} items? (is|are) claimed by an embed worker that is no longer running`));

  const worker = runWorker();
  try {
    await until("the dead worker's items drained", async () => (await queue("killed")).pending === 0, 30_000);
  } finally {
    await worker.stop();
  }
  expect(await vectors("killed")).toBe(texts.length);
  expect((await storeHealthReportFor({ store: "killed", principal: "operator" })).status).toBe("healthy");
  tally.faultsSurvived++;
  tally.writesFound += texts.length;
}, 180_000);

describe.runIf(onPg)("two replicas on PostgreSQL", () => {
  it("report the same provider state: one outage is one status change and one alert, and one more when it is over", async () => {
    await putNotes("shared", 4, "shared");
    const events = async () => governanceSql<{ status: string }>("select status from health_events where kind = 'store_status' and store = 'shared' order by id");
    await runStatusWatchPass();
    const before = (await events()).length;

    fake.state.defaultMode = "500";
    tally.faultsInjected++;
    // Replica A's worker meets the outage.
    await until("the outage is met", async () => (await embedOneBatch("shared")).error !== undefined);
    // Each replica watches the store status, again and again, as both servers do.
    for (let round = 0; round < 6; round++) {
      await runStatusWatchPass();
      const back = asAnotherReplica();
      try {
        expect((await storeHealthReportFor({ store: "shared", principal: "operator" })).status).toBe("provider_down");
        await runStatusWatchPass();
      } finally {
        back();
      }
    }
    expect((await events()).slice(before).map((e) => e.status)).toEqual(["provider_down"]);

    fake.state.defaultMode = "ok";
    const worker = runWorker();
    try {
      await until("the backlog drained", async () => (await queue("shared")).pending === 0);
    } finally {
      await worker.stop();
    }
    for (let round = 0; round < 3; round++) {
      await runStatusWatchPass();
      const back = asAnotherReplica();
      try {
        await runStatusWatchPass();
      } finally {
        back();
      }
    }
    expect((await events()).slice(before).map((e) => e.status)).toEqual(["provider_down", "healthy"]);
    tally.faultsSurvived++;
  });
});

/** Mount a tmpfs (root with CAP_SYS_ADMIN); null with the reason when this machine cannot. */
function mountTmpfs(dir: string, size: string): string | null {
  fs.mkdirSync(dir, { recursive: true });
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", dir], { encoding: "utf8" });
  return r.status === 0 ? null : (r.stderr || r.error?.message || `mount exited ${r.status}`).trim();
}

const canMount = !onPg && process.getuid?.() === 0;
describe.runIf(canMount)("a full disk (a real tmpfs; SQLite: on PostgreSQL DATA_DIR holds none of the data)", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-embedfull-"));
  let fullEnv: TestEnv | null = null;
  afterAll(async () => {
    await fullEnv?.cleanup().catch(() => undefined);
    spawnSync("umount", [path.join(root, "data", "stores")]);
    spawnSync("umount", [path.join(root, "data")]);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it("vectors made while the ledger's disk is full are not charged: the queue is held, health says why, and it drains once space returns", async () => {
    const dataDir = path.join(root, "data");
    // The ledger (governance.db) on a small disk, the stores on a roomy one: the vector write succeeds, its provenance cannot.
    const why = mountTmpfs(dataDir, "6m") ?? mountTmpfs(path.join(dataDir, "stores"), "64m");
    expect(why).toBeNull();
    fullEnv = await useTestBackend({ ...ENV, DUALMIND_EMBED_BASE_URL: fake.baseUrl, DATA_DIR: dataDir });
    resetEmbedderForTests();
    await getEmbedder().fingerprint;
    const texts = await putNotes("full", 6, "full");
    getStoreDb({ store: "full" });
    // Fold the ledger's WAL in and fill its disk to the last byte.
    getGovernance().sqlite.pragma("wal_checkpoint(TRUNCATE)");
    const ballast = path.join(dataDir, "ballast");
    const fd = fs.openSync(ballast, "w");
    const block = Buffer.alloc(64 * 1024, 1);
    try {
      for (;;) fs.writeSync(fd, block);
    } catch {
      // ENOSPC: full
    }
    try {
      for (;;) fs.writeSync(fd, block, 0, 512);
    } catch {
      // full to the last sector
    }
    fs.closeSync(fd);
    tally.faultsInjected++;

    for (let i = 0; i < MAX_EMBED_ATTEMPTS + 2; i++) {
      await storeSql("full", "update embed_queue set next_attempt_at = 0");
      await processEmbedBatch({ handle: getStoreDb({ store: "full" }) });
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(await queue("full")).toEqual({ pending: texts.length, parked: 0, attempts: 0 });
    const report = await storeHealthReportFor({ store: "full", principal: "operator" });
    expect(report.status).toBe("stalled");
    expect(report.status_reason).toMatch(/disk_full: .*(database or disk is full|SQLITE_FULL)/);

    fs.rmSync(ballast);
    await until("the backlog drained after space returned", async () => {
      await processEmbedBatch({ handle: getStoreDb({ store: "full" }) });
      return (await queue("full")).pending === 0;
    });
    expect(await queue("full")).toEqual({ pending: 0, parked: 0, attempts: 0 });
    expect(await vectors("full")).toBe(texts.length);
    expect((await storeHealthReportFor({ store: "full", principal: "operator" })).status).toBe("healthy");
    tally.faultsSurvived++;
    tally.writesFound += texts.length;
  });
});
