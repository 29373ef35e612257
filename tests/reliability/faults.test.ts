import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { closeAllDatabases, getGovernance, getStoreDb } from "@/lib/db/connection";
import { verifyStore } from "@/lib/index/verify";
import { stores } from "@/lib/stores/backend";
import { governanceSql, itSqliteOnly, onPg, sqliteOnlyCheck, storeSql, useTestBackend, type TestEnv } from "../backend";
import { api, startServer, type RunningServer } from "../fixtures/next-server";
import { recordTally } from "./summary";

/**
 * Faults against real servers: kill -9 mid-write, mid-reindex and
 * mid-re-embed, a full disk, a missing vector extension. On SQLite, and on
 * PostgreSQL in vitest.reliability.pg.config.ts (each server a replica on the
 * data dir's database; a restart is a new replica on the same database).
 */
let env: TestEnv;
let server: RunningServer | null = null;
const tally = { requests: 0, writesAcknowledged: 0, writesFound: 0, faultsInjected: 0, faultsSurvived: 0, serverErrorsSeen: 0 };

beforeAll(async () => {
  // The servers set themselves up (first admin, core and default stores), as on a first start.
  env = await useTestBackend({}, { bootstrap: false });
});
afterAll(async () => {
  await server?.kill9();
  recordTally(onPg ? "faults: kill -9 (PostgreSQL)" : "faults: kill -9, disk full, no sqlite-vec", tally);
  await env?.cleanup();
});

async function serve(extra: Record<string, string> = {}): Promise<RunningServer> {
  // A test that failed half-way leaves its server up: never leak it past the next start.
  await server?.kill9();
  server = await startServer({ dataDir: env.dataDir, env: extra });
  return server;
}

async function call(method: string, p: string, body?: unknown) {
  tally.requests++;
  const r = await api(server!.url, method, p, { body });
  if (r.status >= 500) tally.serverErrorsSeen++;
  return r;
}

async function kill9(): Promise<void> {
  tally.faultsInjected++;
  await server!.kill9();
  server = null;
}

/** After a crash: both databases pass integrity_check (SQLite), the store verifies consistent and the audit chain holds. */
async function assertIntact(store: string): Promise<void> {
  closeAllDatabases();
  await sqliteOnlyCheck("integrity_check of index.db and governance.db", () => {
    expect(getStoreDb({ store }).sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(getGovernance().sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
  });
  expect((await stores().verifyStore({ store })).consistent).toBe(true);
  expect((await governance().verifyAuditChain({})).ok).toBe(true);
  closeAllDatabases();
}

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 90_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

describe("kill -9 of a real server", () => {
  it("during batch writes: every acknowledged batch survives whole, the one in flight is all or nothing", async () => {
    await serve();
    expect((await call("POST", "/stores", { name: "crash" })).status).toBe(201);
    const acked: number[] = [];
    const sent: number[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const batch = w * 100_000 + n;
        sent.push(batch);
        const r = await call("PUT", "/stores/crash/documents", { documents: Array.from({ length: 50 }, (_, k) => ({ path: `batch-${batch}/doc-${k}.md`, content: `# batch ${batch} doc ${k}\n\n${"ledger chain ".repeat(40)}` })) });
        if (r.status === 200) acked.push(batch);
        else if (r.status !== 0) throw new Error(`unexpected ${r.status}: ${JSON.stringify(r.json)}`);
        else break;
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    await waitFor("20 acknowledged batches", async () => acked.length >= 20);
    await kill9();
    stop = true;
    await Promise.all(writers);

    await assertIntact("crash");
    tally.writesAcknowledged += acked.length * 50;
    for (const batch of sent) {
      const n = Number((await storeSql<{ n: number }>("crash", "select count(*) as n from documents where path like ?", [`batch-${batch}/%`]))[0].n);
      if (acked.includes(batch)) tally.writesFound += n;
      if (acked.includes(batch)) expect(n).toBe(50);
      else expect([0, 50]).toContain(n);
    }
    closeAllDatabases();
    await serve();
    expect((await call("GET", "/stores/crash/verify")).status).toBe(200);
    tally.faultsSurvived++;
  });

  itSqliteOnly(
    "during a reindex: the previous index stays whole, and the job (a row in governance.db) resumes by itself after restart",
    "on PostgreSQL the rebuild is one transaction with no progress to catch mid-run; the job take-over is the PostgreSQL test below",
    async () => {
    // The memory folder watch is off for this test: it would index the new files itself (and again at the restart's
    // start-up scan), so the job would have nothing left to add and its resumption could not be told apart.
    await serve({ DUALMIND_MEMORY_WATCH: "false" });
    const dir = path.join(env.dataDir, "stores", "crash", "memory", "bulk");
    fs.mkdirSync(dir, { recursive: true });
    // Enough notes that the reindex is still running when the kill lands: the kill follows its first progress row at once.
    const NOTES = 3000;
    for (let i = 0; i < NOTES; i++) fs.writeFileSync(path.join(dir, `note-${i}.md`), `# Note ${i}\n\n${"word ".repeat(150 + (i % 40))}\n`);
    // The kill must land mid-run whatever the machine's speed: the job's first progress row is written as it starts,
    // so the test watches governance.db itself (from this process, while the server works) and kills on that row,
    // instead of asking over HTTP a server whose event loop the reindex keeps busy.
    const started = call("POST", "/stores/crash/reindex");
    const caught = await waitFor("the reindex to record progress", async () => {
      const [row] = await governanceSql<{ id: string; status: string; progress_json: string | null }>("select id, status, progress_json from admin_jobs where kind = 'reindex' and store = 'crash' order by started_at desc limit 1");
      return row?.progress_json ? row : null;
    }, 90_000, 1);
    await kill9();
    expect(caught.status, "the reindex was still running when the server was killed").toBe("running");
    const jobId = caught.id;
    expect([202, 0]).toContain((await started).status);

    await assertIntact("crash");
    // Nobody asks again: the restarted server finds the job its predecessor left running and takes it over.
    await serve({ DUALMIND_MEMORY_WATCH: "false" });
    type JobView = { id: string; status: string; attempts: number; result: { counts: { added: number } } | null };
    const resumed = await waitFor("the interrupted reindex to finish after restart", async () => {
      const r = await call("GET", `/jobs/${jobId}`);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      const j = r.json as { job: JobView };
      return j.job.status !== "running" && j.job;
    });
    expect(resumed).toMatchObject({ id: jobId, status: "succeeded", attempts: 2, result: { counts: { added: NOTES } } });
    const verify = (await call("GET", "/stores/crash/verify")).json as { ok: boolean; counts: { file_documents: number } };
    expect(verify).toMatchObject({ ok: true, counts: { file_documents: NOTES } });
    await server!.stop();
    server = null;
    const resumeAudit = getGovernance().sqlite.prepare("select actor, target, details from audit_log where action = 'store.reindex.resume'").all() as { actor: string; target: string; details: string }[];
    expect(resumeAudit).toEqual([{ actor: "system:jobs", target: "store:crash", details: expect.stringContaining(jobId) }]);
    closeAllDatabases();
    tally.faultsSurvived++;
  });

  it("a reindex its process left running (it died elsewhere: silent heartbeat) is taken over by a server without anyone asking", async () => {
    await server?.stop();
    server = null;
    // What a replica (or a process on another host) killed mid-reindex leaves: the job running, its heartbeat long silent.
    const jobId = "00000000-0000-4000-8000-00000000dead";
    const longAgo = Date.now() - 10 * 60_000;
    await governanceSql("insert into admin_jobs (id, kind, store, actor, status, owner, attempts, started_at, heartbeat_at) values (?, 'reindex', 'crash', 'admin', 'running', 'gone-host:4242:dead', 1, ?, ?)", [jobId, longAgo, longAgo]);
    tally.faultsInjected++;
    await serve();
    type JobView = { id: string; status: string; attempts: number };
    const finished = await waitFor("the orphaned reindex to be taken over and finish", async () => {
      const r = await call("GET", `/jobs/${jobId}`);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      const j = (r.json as { job: JobView }).job;
      return j.status !== "running" && j;
    });
    expect(finished).toMatchObject({ id: jobId, status: "succeeded", attempts: 2 });
    const resumed = await governanceSql<{ actor: string; target: string }>("select actor, target from audit_log where action = 'store.reindex.resume' and details like ?", [`%${jobId}%`]);
    expect(resumed).toEqual([{ actor: "system:jobs", target: "store:crash" }]);
    expect((await governance().verifyAuditChain({})).ok).toBe(true);
    tally.faultsSurvived++;
  });

  it("during a re-embed: the job is in the database and finishes by itself after restart", async () => {
    await serve();
    expect((await call("POST", "/stores", { name: "reembed" })).status).toBe(201);
    // Enough for hundreds of worker steps (fewer on PostgreSQL, where each step is several round trips): the re-embed
    // still runs long enough to be hit, and the kill follows the first step seen done at once.
    const batches = onPg ? 6 : 8;
    for (let b = 0; b < batches; b++) {
      const r = await call("PUT", "/stores/reembed/documents", { documents: Array.from({ length: 100 }, (_, k) => ({ path: `r/${b}-${k}.md`, content: `# r ${b} ${k}\n\nvector drift rotation ${b * 100 + k}` })) });
      expect(r.status).toBe(200);
    }
    await waitFor("the first embedding pass", async () => ((await call("GET", "/stores/reembed/health")).json as { backlog: { pending: number } }).backlog.pending === 0);
    await server!.stop();
    // A model change (another builtin dimension) makes every vector stale; small batches keep the re-embed running long enough to be hit.
    // The killed worker's claims (a batch in flight when the kill lands) are taken again when their lease runs out
    // (DUALMIND_EMBED_LEASE_MS, 5 min by default: another process cannot tell a dead worker from a slow one), on both
    // backends: short here, as in tests/pg/replicas-kill.test.ts. With the default the resumed job waits those 5 minutes
    // whenever the kill lands mid-batch (seen once in CI: the 120 s wait below ran out).
    const newModel = { DUALMIND_EMBED_DIM: "256", DUALMIND_EMBED_BATCH_SIZE: onPg ? "4" : "2", DUALMIND_EMBED_LEASE_MS: "3000" };
    await serve(newModel);
    const started = await call("POST", "/stores/reembed/reembed", {});
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    expect((started.json as { job: { total: number } }).job.total).toBe(batches * 100);
    await waitFor("the re-embed to be under way", async () => {
      const j = ((await call("GET", "/stores/reembed/reembed")).json as { job: { done: number; remaining: number } | null }).job;
      return j !== null && j.done > 0 && j.remaining > 0;
    });
    await kill9();

    await assertIntact("reembed");
    // Restarted with the worker's usual batches (the batch size is no part of the model): small ones were for the kill.
    await serve({ ...newModel, DUALMIND_EMBED_BATCH_SIZE: "32" });
    await waitFor("the resumed re-embed to switch models", async () => ((await call("GET", "/stores/reembed/reembed")).json as { job: { status: string } | null }).job?.status === "done", 120_000);
    const health = (await call("GET", "/stores/reembed/health")).json as { active_model: { dimension: number }; coverage_pct: number | null };
    expect(health.active_model.dimension).toBe(256);
    expect(health.coverage_pct).toBe(100);
    tally.faultsSurvived++;
    await server!.stop();
    server = null;
  });
});

describe("disk full and a missing vector extension", () => {
  itSqliteOnly("a full disk answers 507 with the envelope, writes nothing and corrupts nothing; writes work again once there is room", "SQLite's max_page_count simulates it; PostgreSQL's own full disk (SQLSTATE 53100) is not simulated by this suite", async () => {
    closeAllDatabases();
    const { PUT } = await import("@/app/api/v1/stores/[store]/documents/route");
    const { callRoute } = await import("../helpers");
    const { createApiToken } = await import("@/lib/auth/tokens");
    const { token } = createApiToken({ input: { label: "disk", agent_id: "disk", scopes: ["write"] }, actor: "test" });
    const handle = getStoreDb({ store: "crash" });
    const before = (handle.sqlite.prepare("select count(*) as n from documents").get() as { n: number }).n;
    // Simulated full disk: the connection may not grow the file past its current size.
    const pages = handle.sqlite.pragma("page_count", { simple: true }) as number;
    handle.sqlite.pragma(`max_page_count = ${pages}`);
    tally.faultsInjected++;
    const big = { documents: Array.from({ length: 200 }, (_, k) => ({ path: `full/doc-${k}.md`, content: `# full ${k}\n\n${"disk pressure sample ".repeat(200)}` })) };
    const full = await callRoute(PUT, { method: "PUT", token, body: big, params: { store: "crash" } });
    tally.requests++;
    expect(full.status).toBe(507);
    expect(full.json.error).toMatchObject({ code: "insufficient_storage" });
    expect((handle.sqlite.prepare("select count(*) as n from documents").get() as { n: number }).n).toBe(before);
    expect(handle.sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
    handle.sqlite.pragma("max_page_count = 1073741823");
    const ok = await callRoute(PUT, { method: "PUT", token, body: big, params: { store: "crash" } });
    tally.requests++;
    expect(ok.status).toBe(200);
    tally.writesAcknowledged += 200;
    tally.writesFound += (handle.sqlite.prepare("select count(*) as n from documents where path like 'full/%'").get() as { n: number }).n;
    expect(verifyStore({ handle: getStoreDb({ store: "crash" }) }).consistent).toBe(true);
    tally.faultsSurvived++;
  });

  itSqliteOnly("without sqlite-vec the server still answers: full-text as before, vectors by exact scan, and says so", "sqlite-vec is the SQLite backend's extension; PostgreSQL's vectors (pgvector or the exact scan) are tests/pg/store-search.test.ts's", async () => {
    await serve({ DUALMIND_DISABLE_VECTORS: "true" });
    tally.faultsInjected++;
    const fts = await call("GET", "/stores/crash/search?q=ledger%20chain&mode=fts");
    expect(fts.status).toBe(200);
    expect((fts.json as { results: unknown[] }).results.length).toBeGreaterThan(0);
    const hybrid = await call("GET", "/stores/reembed/search?q=vector%20drift&mode=hybrid");
    expect(hybrid.status).toBe(200);
    const body = hybrid.json as { results: unknown[] };
    expect(body.results.length).toBeGreaterThan(0);
    const health = (await call("GET", "/stores/reembed/health")).json as { vector_index: { available: boolean } };
    expect(health.vector_index.available).toBe(false);
    tally.faultsSurvived++;
  });
});
