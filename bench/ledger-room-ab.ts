/**
 * A governance write's cost on PostgreSQL before beside after: task creations
 * through governance() (the repository under POST /tasks) by a baseline
 * checkout (BENCH_LEDGER_BASELINE, e.g. /work/main with node_modules linked)
 * and by this one, in one process, each on its own fresh database of one
 * server, the sides taking turns write by write so both see the same load.
 * Prints each side's server time per write (pg_stat_statements: every
 * statement's planning and execution in the side's database, read after each
 * write from another database) and the time the write took in the process,
 * mean, p50 and p95, and the statements a write sends.
 *
 *   BENCH_LEDGER_BASELINE=/path/to/baseline npx tsx bench/ledger-room-ab.ts
 *
 * BENCH_LEDGER_WRITES: writes per side (default 600, the first 100 are warm-up and not counted).
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { startTestPostgres, type TestPostgres } from "../tests/pg/harness";
import { percentile, printTable } from "./table";

const WRITES = Number(process.env.BENCH_LEDGER_WRITES ?? 600);
const WARMUP = 100;
const AGENTS = 20;

let sent: number | null = null;

/** Count the statements a write sends, on the `pg` a checkout resolves (a baseline's own node_modules is another module). */
function countStatements(root: string): void {
  const proto = (createRequire(path.join(root, "package.json"))("pg") as { Client: { prototype: { query: (...a: unknown[]) => unknown; counted?: boolean } } }).Client.prototype;
  if (proto.counted) return;
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    if (sent !== null) sent++;
    return original.apply(this, args);
  };
  proto.counted = true;
}

type Side = { name: string; db: string; write: (i: number) => Promise<unknown>; close: () => Promise<void>; ms: number[]; serverMs: number[]; statements: number[] };

/** A throwaway cluster that loads pg_stat_statements (started once to set it, then again to load it). */
async function serverWithStatementStats(dir: string): Promise<TestPostgres> {
  const first = await startTestPostgres({ keepDir: dir });
  try {
    await onServer(first.url, ["alter system set shared_preload_libraries = 'pg_stat_statements'"]);
  } finally {
    first.stop();
  }
  const server = await startTestPostgres({ keepDir: dir });
  try {
    await onServer(server.url, ["create extension if not exists pg_stat_statements", "alter system set pg_stat_statements.track_planning = on", "select pg_reload_conf()"]);
  } catch (e) {
    server.stop();
    throw e;
  }
  return server;
}

async function onServer(url: string, statements: string[]): Promise<void> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    for (const q of statements) await c.query(q);
  } finally {
    await c.end();
  }
}

async function sideOf({ name, db, root, url }: { name: string; db: string; root: string; url: string }): Promise<Side> {
  countStatements(root);
  const at = (p: string) => import(path.join(root, p));
  const [{ pgEngine }, { openPgHandle, closePgHandle }, { governanceOn }] = await Promise.all([at("lib/db/engine.ts"), at("lib/db/pg.ts"), at("lib/backend/governance.ts")]);
  const pg = await openPgHandle({ url, max: 2 });
  const gov = governanceOn(pgEngine(pg));
  return {
    name,
    db,
    write: (i) => gov.createTask({ input: { task_id: `t${i}`, intent: "bench a governance write", spec: { step: i, text: "s".repeat(200) } }, requestedBy: `agent-${i % AGENTS}` }),
    close: () => closePgHandle(pg),
    ms: [],
    serverMs: [],
    statements: [],
  };
}

async function main() {
  const baseline = process.env.BENCH_LEDGER_BASELINE;
  if (!baseline) throw new Error("set BENCH_LEDGER_BASELINE to a baseline checkout (with node_modules)");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-ledger-ab-"));
  process.env.DATA_DIR = dataDir;
  // Its own temp dir: the server's user must reach it.
  const pgDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-ledger-ab-pg-"));
  const server = await serverWithStatementStats(pgDir);
  const admin = new Client({ connectionString: server.url });
  const sides: Side[] = [];
  try {
    await admin.connect();
    const dbs = ["ledger_ab_before", "ledger_ab_after"];
    // Constant names, never input.
    for (const db of dbs) await admin.query(`create database ${db}`);
    const url = (db: string) => server.url.replace(/\/postgres$/, `/${db}`);
    sides.push(await sideOf({ name: `before (${baseline})`, db: dbs[0], root: baseline, url: url(dbs[0]) }), await sideOf({ name: "after (this checkout)", db: dbs[1], root: path.resolve(__dirname, ".."), url: url(dbs[1]) }));
    const serverMsOf = async (db: string) => Number((await admin.query("select coalesce(sum(s.total_exec_time + s.total_plan_time), 0) as ms from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = $1", [db])).rows[0].ms);
    for (let i = 0; i < WRITES; i++) {
      const order = i % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const serverBefore = await serverMsOf(side.db);
        sent = 0;
        const start = process.hrtime.bigint();
        await side.write(i);
        const ms = Number(process.hrtime.bigint() - start) / 1e6;
        const statements = sent;
        sent = null;
        if (i >= WARMUP) {
          side.ms.push(ms);
          side.serverMs.push((await serverMsOf(side.db)) - serverBefore);
          side.statements.push(statements);
        }
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const stats = (xs: number[]) => `${mean(xs).toFixed(3)} / ${percentile(xs, 50).toFixed(3)} / ${percentile(xs, 95).toFixed(3)}`;
    printTable(`task creation on PostgreSQL, ${WRITES - WARMUP} writes per side (sides alternating), ms per write: mean / p50 / p95`, sides.map((s) => ({ side: s.name, "server time": stats(s.serverMs), "in process": stats(s.ms), "statements/write": mean(s.statements).toFixed(2) })));
  } finally {
    for (const s of sides) await s.close();
    await admin.end().catch(() => undefined);
    server.stop();
    for (const dir of [dataDir, pgDir]) fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
