/**
 * A governance write's cost on PostgreSQL before beside after: task creations
 * through governance() (the repository under POST /tasks) by a baseline
 * checkout (BENCH_LEDGER_BASELINE, e.g. /work/main with node_modules linked)
 * and by this one, in one process, each on its own fresh database of one
 * server, the sides taking turns write by write so both see the same load.
 * Prints each side's mean, p50 and p95 per write and the statements a write
 * sends.
 *
 *   BENCH_LEDGER_BASELINE=/path/to/baseline npx tsx bench/ledger-room-ab.ts
 *
 * BENCH_LEDGER_WRITES: writes per side (default 600, the first 100 are warm-up and not counted);
 * BENCH_PG_URL: an existing server's admin URL instead of a throwaway cluster.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { Client } from "pg";
import { benchPostgres } from "./pg-server";
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

type Side = { name: string; write: (i: number) => Promise<unknown>; close: () => Promise<void>; ms: number[]; statements: number[] };

async function sideOf({ name, root, url }: { name: string; root: string; url: string }): Promise<Side> {
  countStatements(root);
  const at = (p: string) => import(path.join(root, p));
  const [{ pgEngine }, { openPgHandle, closePgHandle }, { governanceOn }] = await Promise.all([at("lib/db/engine.ts"), at("lib/db/pg.ts"), at("lib/backend/governance.ts")]);
  const pg = await openPgHandle({ url, max: 2 });
  const gov = governanceOn(pgEngine(pg));
  return {
    name,
    write: (i) => gov.createTask({ input: { task_id: `t${i}`, intent: "bench a governance write", spec: { step: i, text: "s".repeat(200) } }, requestedBy: `agent-${i % AGENTS}` }),
    close: () => closePgHandle(pg),
    ms: [],
    statements: [],
  };
}

async function main() {
  const baseline = process.env.BENCH_LEDGER_BASELINE;
  if (!baseline) throw new Error("set BENCH_LEDGER_BASELINE to a baseline checkout (with node_modules)");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-ledger-ab-"));
  process.env.DATA_DIR = dataDir;
  const server = await benchPostgres("postgres");
  if (!server) return;
  const admin = new Client({ connectionString: server.url });
  await admin.connect();
  const urls: string[] = [];
  for (const db of ["ledger_ab_before", "ledger_ab_after"]) {
    // Constant names, never input.
    await admin.query(`drop database if exists ${db}`);
    await admin.query(`create database ${db}`);
    urls.push(server.url.replace(/\/postgres$/, `/${db}`));
  }
  await admin.end();
  const sides = [await sideOf({ name: `before (${baseline})`, root: baseline, url: urls[0] }), await sideOf({ name: "after (this checkout)", root: path.resolve(__dirname, ".."), url: urls[1] })];
  try {
    for (let i = 0; i < WRITES; i++) {
      const order = i % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        sent = 0;
        const start = process.hrtime.bigint();
        await side.write(i);
        const ms = Number(process.hrtime.bigint() - start) / 1e6;
        if (i >= WARMUP) {
          side.ms.push(ms);
          side.statements.push(sent);
        }
        sent = null;
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    printTable(`task creation on PostgreSQL, ${WRITES - WARMUP} writes per side (sides alternating), ms per write`, sides.map((s) => ({ side: s.name, mean: mean(s.ms).toFixed(3), p50: percentile(s.ms, 50).toFixed(3), p95: percentile(s.ms, 95).toFixed(3), "statements/write": mean(s.statements).toFixed(2) })));
  } finally {
    for (const s of sides) await s.close();
    server.server?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
