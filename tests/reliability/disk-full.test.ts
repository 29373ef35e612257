/**
 * A real full disk, not a simulated one: DATA_DIR is a 24 MB tmpfs, filled to
 * the last page by a ballast file while a real `next start` serves it. Needs
 * permission to mount (root with CAP_SYS_ADMIN, as in this project's CI
 * container); without it the file is skipped and says why. The always-on
 * simulation (SQLite max_page_count) is in faults.test.ts. SQLite only: on
 * PostgreSQL (vitest.reliability.pg.config.ts) DATA_DIR holds none of the
 * data, so filling it tests nothing; PostgreSQL's own full disk (SQLSTATE
 * 53100) answers 507 through lib/errors.ts infrastructureError.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onPg } from "../backend";
import { spawnCli } from "../fixtures/cli";
import { api, startServer, type ApiResult, type RunningServer } from "../fixtures/next-server";
import { recordTally } from "./summary";

const SIZE = "24m";

function tryMountTmpfs(): { dir: string | null; why: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-tmpfs-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${SIZE},mode=0700`, "tmpfs", dir], { encoding: "utf8" });
  if (r.status === 0) return { dir, why: "" };
  fs.rmdirSync(dir);
  return { dir: null, why: (r.stderr || r.error?.message || `mount exited ${r.status}`).trim() };
}

const WHY_SQLITE_ONLY = "SQLite only: on PostgreSQL DATA_DIR holds none of the data";
const tmpfs = onPg ? { dir: null, why: WHY_SQLITE_ONLY } : tryMountTmpfs();
if (!tmpfs.dir) process.stderr.write(`disk-full.test.ts skipped: ${onPg ? WHY_SQLITE_ONLY : `cannot mount a tmpfs here (${tmpfs.why})`}\n`);
const tally = { requests: 0, writesAcknowledged: 0, writesFound: 0, faultsInjected: 0, faultsSurvived: 0, serverErrorsSeen: 0 };
let server: RunningServer | null = null;

afterAll(async () => {
  await server?.kill9();
  if (tmpfs.dir) {
    spawnSync("umount", [tmpfs.dir]);
    fs.rmSync(tmpfs.dir, { recursive: true, force: true });
    recordTally("faults: a real full disk (tmpfs)", tally);
  }
});

async function call(method: string, p: string, body?: unknown): Promise<ApiResult> {
  tally.requests++;
  const r = await api(server!.url, method, p, { body });
  if (r.status >= 500 && r.status !== 507) tally.serverErrorsSeen++;
  return r;
}

/** Every database's WAL folded in and truncated to 0 bytes, so the next write must allocate. */
function truncateWals(dataDir: string): void {
  const files = [path.join(dataDir, "governance.db"), ...fs.readdirSync(path.join(dataDir, "stores")).map((s) => path.join(dataDir, "stores", s, "index.db"))];
  for (const f of files) {
    const db = new Database(f);
    db.pragma("wal_checkpoint(TRUNCATE)");
    db.close();
  }
}

/** Fill the file system to its last byte, as another program would. Returns the ballast's path. */
function fillDisk(dir: string): string {
  const ballast = path.join(dir, "ballast.bin");
  const fd = fs.openSync(ballast, "w");
  for (const size of [1 << 20, 1 << 12, 1]) {
    const chunk = Buffer.alloc(size);
    try {
      for (;;) fs.writeSync(fd, chunk);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
    }
  }
  fs.closeSync(fd);
  return ballast;
}

/** One write of each kind, to both databases and the memory folder. `tag` makes each attempt's content unique. */
function writes(tag: string): { what: string; method: string; path: string; body: unknown }[] {
  return [
    { what: "documents batch", method: "PUT", path: "/stores/full/documents", body: { documents: [0, 1, 2].map((k) => ({ path: `full/${tag}-${k}.md`, content: `# ${tag} ${k}\n\nstorage pressure ${tag}` })) } },
    { what: "memory (file + index)", method: "POST", path: "/stores/full/memories", body: { path: `notes/${tag}`, body: `remember ${tag}` } },
    { what: "thought", method: "POST", path: "/stores/full/thoughts", body: { content: `a thought ${tag}` } },
    { what: "trace", method: "POST", path: "/stores/full/traces", body: { intent: { verb: "fix", target: `disk ${tag}` }, shard_type: "disk", outcome: "failure", key_issue: `full ${tag}` } },
    { what: "dialectic session (governance)", method: "POST", path: "/dialectic/sessions", body: { session_id: `disk-${tag}`, topic: `full disk ${tag}`, reviewer_agent_id: "reviewer" } },
    { what: "task (governance)", method: "POST", path: "/tasks", body: { task_id: `task-${tag}`, intent: `full disk ${tag}`, spec: { tag } } },
    { what: "store (a new folder and index.db)", method: "POST", path: "/stores", body: { name: `store-${tag}` } },
    { what: "token (audited)", method: "POST", path: "/tokens", body: { label: `disk ${tag}`, agent_id: `agent-${tag}`, scopes: ["read"] } },
  ];
}

describe.skipIf(!tmpfs.dir)(`a real full disk: DATA_DIR on a ${SIZE} tmpfs filled to the last byte${onPg ? ` [${WHY_SQLITE_ONLY}]` : ""}`, () => {
  const dataDir = tmpfs.dir!;
  let ballast = "";

  beforeAll(async () => {
    server = await startServer({ dataDir });
    expect((await call("POST", "/stores", { name: "full" })).status).toBe(201);
    for (const w of writes("before")) {
      expect([200, 201], `${w.what} before the disk fills`).toContain((await call(w.method, w.path, w.body)).status);
      tally.writesAcknowledged++;
    }
  });

  it("every kind of write answers 507 with the envelope and leaves nothing behind; reads keep answering", async () => {
    truncateWals(dataDir);
    ballast = fillDisk(dataDir);
    tally.faultsInjected++;
    for (const w of writes("during")) {
      const r = await call(w.method, w.path, w.body);
      expect({ what: w.what, status: r.status, error: (r.json as { error?: { code: string } }).error?.code }).toEqual({ what: w.what, status: 507, error: "insufficient_storage" });
    }
    // Reads need no space.
    const search = await call("GET", "/stores/full/search?q=storage%20pressure&mode=fts");
    expect(search.status).toBe(200);
    expect(JSON.stringify(search.json)).toContain("full/before-0.md");
    expect(JSON.stringify(search.json)).not.toContain("during");
    const memories = await call("GET", "/stores/full/memories");
    expect(memories.status).toBe(200);
    expect(JSON.stringify(memories.json)).toContain("notes/before");
    expect(JSON.stringify(memories.json)).not.toContain("notes/during");
    expect(fs.readdirSync(path.join(dataDir, "stores", "full", "memory", "notes")).filter((f) => f.includes("during"))).toEqual([]);
  });

  it("once there is room again the same writes succeed, exactly once, and nothing is corrupt", async () => {
    fs.rmSync(ballast);
    for (const w of writes("during")) {
      const r = await call(w.method, w.path, w.body);
      expect([200, 201], `${w.what} after room was made`).toContain(r.status);
      tally.writesAcknowledged++;
    }
    await server!.stop();
    server = null;

    const store = new Database(path.join(dataDir, "stores", "full", "index.db"), { readonly: true });
    const governance = new Database(path.join(dataDir, "governance.db"), { readonly: true });
    try {
      expect(store.pragma("integrity_check", { simple: true })).toBe("ok");
      expect(governance.pragma("integrity_check", { simple: true })).toBe("ok");
      // Each acknowledged write is there exactly once: the refused attempts left no row behind.
      const count = (db: Database.Database, sql: string, arg: string) => (db.prepare(sql).get(arg) as { n: number }).n;
      const found = (tag: string) => ({
        documents: count(store, "select count(*) as n from documents where path like ?", `full/${tag}-%`),
        memory: count(store, "select count(*) as n from memories where path = ?", `notes/${tag}`),
        thought: count(store, "select count(*) as n from thoughts where content = ?", `a thought ${tag}`),
        trace: count(store, "select count(*) as n from reasoning_traces where key_issue = ?", `full ${tag}`),
        session: count(governance, "select count(*) as n from dialectic_sessions where client_id = ?", `disk-${tag}`),
        task: count(governance, "select count(*) as n from tasks where client_id = ?", `task-${tag}`),
        token: count(governance, "select count(*) as n from api_tokens where agent_id = ?", `agent-${tag}`),
        store: fs.existsSync(path.join(dataDir, "stores", `store-${tag}`, "index.db")) ? 1 : 0,
      });
      const expected = { documents: 3, memory: 1, thought: 1, trace: 1, session: 1, task: 1, token: 1, store: 1 };
      for (const tag of ["before", "during"]) {
        const f = found(tag);
        expect(f, tag).toEqual(expected);
        tally.writesFound += Object.values(f).filter((n) => n > 0).length;
      }
    } finally {
      store.close();
      governance.close();
    }
    // The audit chain is checked by the CLI an operator would run.
    const verify = spawnCli({ args: ["audit", "verify"], env: { DATA_DIR: dataDir } });
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    tally.faultsSurvived++;
  });
});
