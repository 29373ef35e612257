import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { closeAllDatabases, getGovernance, getStoreDb } from "@/lib/db/connection";
import { createMemorySchema } from "@/lib/index/memories";
import { stores } from "@/lib/stores/backend";
import { governanceSql, onPg, sqliteOnlyCheck, storeSql, useTestBackend, type TestEnv } from "../backend";
import { api, RELIABILITY_TOKEN, startServer, type ApiResult, type RunningServer } from "../fixtures/next-server";
import { recordTally } from "./summary";

/**
 * Two real servers, 20 agents, a reindex and both embed workers at once. On
 * SQLite the two servers share one DATA_DIR; on PostgreSQL
 * (vitest.reliability.pg.config.ts) they are two replicas on one database.
 */

const AGENTS = 20;
// Bounded: the suite must fit CI on 2 cores. Each agent also finishes one round of every kind of write (ROUND), however
// slow the machine: what the test checks is that every kind acknowledged is there once, not how many fit in the time.
const LOAD_MS = Number(process.env.RELIABILITY_LOAD_MS ?? 15_000);
const ROUND = 5;
const STORE = "load";

type Ack = { kind: "document" | "trace" | "thought" | "session" | "message" | "task"; key: string };

let env: TestEnv;
let servers: RunningServer[] = [];
beforeAll(async () => {
  // The servers set themselves up (first admin, core and default stores), as on a first start.
  env = await useTestBackend({}, { bootstrap: false });
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill9()));
  await env?.cleanup();
});

/** Memories for the reindex to work through: files in the store's memory folder, or on PostgreSQL rows of its memories table (the truth there). */
async function seedMemories(count: number): Promise<void> {
  const text = (i: number) => `# Seed ${i}\n\n${"backup restore rotation ".repeat(20 + (i % 30))}\n`;
  if (onPg) {
    for (let i = 0; i < count; i++) await stores().createMemory({ store: STORE, input: createMemorySchema.parse({ path: `seed/note-${i}`, body: text(i) }), actor: "test" });
    return;
  }
  const dir = path.join(env.dataDir, "stores", STORE, "memory", "seed");
  fs.mkdirSync(dir, { recursive: true });
  for (let i = 0; i < count; i++) fs.writeFileSync(path.join(dir, `note-${i}.md`), text(i));
}

it("20 agents on two servers sharing one DATA_DIR (database), during reindex and embedding: every acknowledged write is there exactly once", async () => {
  const a = await startServer({ dataDir: env.dataDir });
  servers.push(a);
  // The second process shares the data dir (and runs its own embed worker).
  const b = await startServer({ dataDir: env.dataDir });
  servers.push(b);
  expect((await api(a.url, "POST", "/stores", { body: { name: STORE } })).status).toBe(201);
  await seedMemories(400);

  const tokens: string[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const r = await api(a.url, "POST", "/tokens", { body: { label: `load agent ${i}`, agent_id: `agent-${i}`, scopes: ["write"], stores: [STORE] } });
    expect(r.status).toBe(201);
    tokens.push((r.json as { token: string }).token);
  }

  const acks: Ack[] = [];
  const failures: { op: string; status: number; body: unknown }[] = [];
  let requests = 0;
  const until = Date.now() + LOAD_MS;

  const call = async (base: string, method: string, p: string, token: string, body?: unknown): Promise<ApiResult> => {
    requests++;
    const r = await api(base, method, p, { token, body });
    // Every refusal counts: the agents only send valid requests.
    if (![200, 201, 202].includes(r.status) || JSON.stringify(r.json).includes("SQLITE_BUSY")) failures.push({ op: `${method} ${p}`, status: r.status, body: r.json });
    return r;
  };
  const ok = (r: ApiResult) => r.status === 200 || r.status === 201;

  async function agent(i: number): Promise<void> {
    const token = tokens[i];
    for (let n = 0; n < ROUND || Date.now() < until; n++) {
      const base = (i + n) % 2 === 0 ? a.url : b.url;
      const tag = `${i}-${n}`;
      switch (n % ROUND) {
        case 0: {
          const r = await call(base, "PUT", `/stores/${STORE}/documents`, token, { documents: [0, 1, 2].map((k) => ({ path: `agents/${i}/doc-${n}-${k}.md`, content: `# agent ${i} document ${n}.${k}\n\nrestore drill ${tag} ${k}` })) });
          if (ok(r)) for (const k of [0, 1, 2]) acks.push({ kind: "document", key: `agents/${i}/doc-${n}-${k}.md` });
          break;
        }
        case 1: {
          const r = await call(base, "POST", `/stores/${STORE}/traces`, token, { intent: { verb: "fix", target: `load ${tag}` }, shard_type: "load", outcome: n % 2 ? "success" : "failure", key_issue: `issue ${tag}` });
          if (r.status === 201) acks.push({ kind: "trace", key: `load ${tag}` });
          break;
        }
        case 2: {
          const r = await call(base, "POST", `/stores/${STORE}/thoughts`, token, { content: `agent ${i} thinks about rotation ${tag}` });
          if (r.status === 201) acks.push({ kind: "thought", key: (r.json as { thought: { id: string } }).thought.id });
          break;
        }
        case 3: {
          const sessionId = `load-${tag}`;
          const s = await call(base, "POST", "/dialectic/sessions", token, { session_id: sessionId, topic: `review ${tag}`, reviewer_agent_id: `agent-${(i + 1) % AGENTS}` });
          if (s.status !== 201) break;
          acks.push({ kind: "session", key: sessionId });
          // The thesis goes to the other server: the session must be visible there at once.
          const other = base === a.url ? b.url : a.url;
          const m = await call(other, "POST", `/dialectic/sessions/${sessionId}/messages`, token, { message_id: `thesis-${tag}`, message_type: "thesis", reasoning: `thesis ${tag}` });
          if (m.status === 201) acks.push({ kind: "message", key: `thesis-${tag}` });
          break;
        }
        default: {
          const r = await call(base, "POST", "/tasks", token, { task_id: `task-${tag}`, intent: `load task ${tag}`, spec: { n, agent: i } });
          if (r.status === 201) acks.push({ kind: "task", key: `task-${tag}` });
        }
      }
    }
  }

  // An admin keeps a reindex running on the first server for the whole load.
  const reindexes: string[] = [];
  async function reindexLoop(): Promise<void> {
    while (Date.now() < until) {
      const r = await call(a.url, "POST", `/stores/${STORE}/reindex`, RELIABILITY_TOKEN);
      expect(r.status).toBe(202);
      const id = (r.json as { job: { id: string } }).job.id;
      if (!reindexes.includes(id)) reindexes.push(id);
      for (;;) {
        const j = await call(a.url, "GET", `/jobs/${id}`, RELIABILITY_TOKEN);
        const status = (j.json as { job?: { status: string } }).job?.status;
        if (status !== "running") {
          expect(status).toBe("succeeded");
          break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  await Promise.all([...Array.from({ length: AGENTS }, (_, i) => agent(i)), reindexLoop()]);
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];

  closeAllDatabases();
  const count = async (rows: Promise<{ n: number | string }[]>) => Number((await rows)[0].n);
  const countOf: Record<Ack["kind"], (key: string) => Promise<number>> = {
    document: (k) => count(storeSql(STORE, "select count(*) as n from documents where path = ?", [k])),
    trace: (k) => count(storeSql(STORE, "select count(*) as n from reasoning_traces where intent_target = ?", [k])),
    thought: (k) => count(storeSql(STORE, "select count(*) as n from thoughts where id = ?", [k])),
    session: (k) => count(governanceSql("select count(*) as n from dialectic_sessions where client_id = ?", [k])),
    message: (k) => count(governanceSql("select count(*) as n from dialectic_messages where client_id = ?", [k])),
    task: (k) => count(governanceSql("select count(*) as n from tasks where client_id = ?", [k])),
  };
  const notOnce: Ack[] = [];
  for (const ack of acks) if ((await countOf[ack.kind](ack.key)) !== 1) notOnce.push(ack);
  const verify = await stores().verifyStore({ store: STORE });
  const audit = await governance().verifyAuditChain({});

  recordTally(`load: 20 agents × 2 servers${onPg ? " (PostgreSQL)" : ""}`, {
    requests,
    writesAcknowledged: acks.length,
    writesFound: acks.length - notOnce.length,
    serverErrorsSeen: failures.filter((f) => f.status === 0 || f.status >= 500).length,
  });

  expect(failures).toEqual([]);
  expect(acks.length).toBeGreaterThan(AGENTS * 5);
  expect(new Set(acks.map((x) => x.kind)).size).toBe(6);
  expect(notOnce).toEqual([]);
  expect(reindexes.length).toBeGreaterThan(0);
  await sqliteOnlyCheck("integrity_check of index.db and governance.db", () => {
    expect(getStoreDb({ store: STORE }).sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(getGovernance().sqlite.pragma("integrity_check", { simple: true })).toBe("ok");
  });
  // On failure: the running total beside its recount, and what the index lacks or holds wrongly.
  expect(verify, JSON.stringify({ usage: verify.usage, not_indexed: verify.not_indexed, hash_mismatches: verify.hash_mismatches, missing_files: verify.missing_files })).toMatchObject({ ok: true, consistent: true, in_sync: true });
  expect(audit.ok).toBe(true);
  // The embed workers of both servers kept up with (or are still working off) the writes; nothing was parked.
  expect(await count(storeSql(STORE, "select count(*) as n from embed_queue where parked_at is not null"))).toBe(0);
});
