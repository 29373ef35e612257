/**
 * `npm start`: validate config, apply migrations and first-run setup, build
 * the query-budget extension if missing and the production bundle when there
 * is none or the sources are newer, then serve.
 */
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { ConfigError, getConfig } from "../lib/config";
import { bootstrapApp } from "../lib/bootstrap";
import { assertSqliteDataDir } from "../lib/db/deployment-marker";
import { closeAllDatabases } from "../lib/db/connection";
import { closePg, migratePg, openPgPool } from "../lib/db/pg";
import { buildIsStale, NEXT_BIN, nextStartArgs, ROOT } from "./build-freshness";

function main() {
  let config;
  try {
    config = getConfig();
    assertSqliteDataDir();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(e.message + "\n");
      process.exit(1);
    }
    throw e;
  }
  if (config.databaseUrl) {
    void migratePostgresThenServe(config.databaseUrl, config.pgPoolMax);
    return;
  }
  void serve();
}

/**
 * With DATABASE_URL: the governance ledger, users and sign-in are served from
 * PostgreSQL; stores are still on local SQLite in DATA_DIR until the store
 * backend lands, so this is one replica, and it says so.
 */
async function migratePostgresThenServe(url: string, max: number) {
  const pool = openPgPool({ url, max });
  try {
    const { schemaVersion } = await migratePg(pool);
    process.stderr.write(`dualmind: PostgreSQL governance schema is at ${schemaVersion}.\n${POSTGRES_SCOPE_NOTE}`);
  } catch (e) {
    process.stderr.write(`dualmind: could not migrate the PostgreSQL database in DATABASE_URL: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  } finally {
    await pool.end();
  }
  await serve();
}

async function serve() {
  const config = getConfig();
  // The query-budget extension is built at install; a checkout that predates it gets it here (a no-op when fresh, never fatal).
  spawnSync(process.execPath, [path.join(ROOT, "scripts", "build-native.mjs")], { cwd: ROOT, stdio: "inherit" });
  await bootstrapApp();
  closeAllDatabases();
  await closePg();

  const nextBin = NEXT_BIN;
  if (buildIsStale()) {
    process.stderr.write("dualmind: building the production bundle (first start or sources changed)…\n");
    const build = spawnSync(process.execPath, [nextBin, "build"], { cwd: ROOT, stdio: "inherit" });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  const env = { ...process.env, NEXTAUTH_URL: config.publicUrl, DATA_DIR: config.dataDir };
  process.stderr.write(`dualmind: data in ${config.dataDir}\ndualmind: sign in at ${config.publicUrl}/login\n`);
  const server = spawn(process.execPath, nextStartArgs({ host: config.host, port: config.port }), { cwd: ROOT, stdio: "inherit", env });
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => server.kill(sig));
  server.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

/** The same words as docs/postgresql.md and `dualmind --help`. */
const POSTGRES_SCOPE_NOTE =
  "dualmind: from PostgreSQL: the governance ledger (tasks, runs, validations, provenance, overrides, dialectic sessions, API tokens), users, sign-in and the login throttle, health events, and their audit rows.\n" +
  "dualmind: from PostgreSQL too, for the API and MCP: stores (list, create, describe), documents, chunks, search (fts, vector, hybrid), memories, categories, verify, reindex and jobs, traces, learnings, recall, reflection settings, store health, re-embed (with a held switch and the candidate model's comparison) and retry-parked; the embed worker embeds their chunks, traces and learnings there.\n" +
  "dualmind: from PostgreSQL too, for the API and MCP: thoughts, chains, nodes, relations, frames, evidence, working memory and remember; the embed worker embeds their thoughts and nodes there.\n" +
  "dualmind: the dashboard reads the PostgreSQL stores too; where a piece is not kept there yet it says so (none reads local SQLite).\n";

main();
