/**
 * `npm start`: validate config, apply migrations and first-run setup, build
 * the query-budget extension if missing and the production bundle when there
 * is none or the sources are newer, then serve.
 */
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { ConfigError, getConfig } from "../lib/config";
import { bootstrapApp } from "../lib/bootstrap";
import { closeAllDatabases } from "../lib/db/connection";
import { migratePg, openPgPool } from "../lib/db/pg";
import { buildIsStale, NEXT_BIN, ROOT } from "./build-freshness";

function main() {
  let config;
  try {
    config = getConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(e.message + "\n");
      process.exit(1);
    }
    throw e;
  }
  if (config.databaseUrl) {
    void refusePostgresAfterMigrating(config.databaseUrl, config.pgPoolMax);
    return;
  }
  // The query-budget extension is built at install; a checkout that predates it gets it here (a no-op when fresh, never fatal).
  spawnSync(process.execPath, [path.join(ROOT, "scripts", "build-native.mjs")], { cwd: ROOT, stdio: "inherit" });
  bootstrapApp();
  closeAllDatabases();

  const nextBin = NEXT_BIN;
  if (buildIsStale()) {
    process.stderr.write("dualmind: building the production bundle (first start or sources changed)…\n");
    const build = spawnSync(process.execPath, [nextBin, "build"], { cwd: ROOT, stdio: "inherit" });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  const env = { ...process.env, NEXTAUTH_URL: config.publicUrl, DATA_DIR: config.dataDir };
  process.stderr.write(`dualmind: data in ${config.dataDir}\ndualmind: sign in at ${config.publicUrl}/login\n`);
  const server = spawn(process.execPath, [nextBin, "start", "-H", config.host, "-p", String(config.port)], { cwd: ROOT, stdio: "inherit", env });
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => server.kill(sig));
  server.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

/**
 * The PostgreSQL backend is in progress (issue 20): its migrations are real and
 * applied here, but the app cannot serve from it yet, so it says so and stops
 * rather than quietly running on SQLite.
 */
async function refusePostgresAfterMigrating(url: string, max: number) {
  const pool = openPgPool({ url, max });
  try {
    const { schemaVersion } = await migratePg(pool);
    process.stderr.write(
      `dualmind: PostgreSQL governance schema is at ${schemaVersion}.\n` +
        "dualmind: serving from PostgreSQL is not available yet (work in progress); unset DATABASE_URL to run on SQLite.\n",
    );
  } catch (e) {
    process.stderr.write(`dualmind: could not migrate the PostgreSQL database in DATABASE_URL: ${e instanceof Error ? e.message : String(e)}\n`);
  } finally {
    await pool.end();
  }
  process.exit(1);
}

main();
