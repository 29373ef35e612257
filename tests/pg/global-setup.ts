import { randomBytes } from "node:crypto";
import { Client } from "pg";
import type { TestProject } from "vitest/node";
import { closePgHandle, openPgHandle } from "@/lib/db/pg";
import { startTestPostgres, type TestPostgres } from "./harness";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of the suite's PostgreSQL server (database `postgres`); each test file makes its own database. */
    pgAdminUrl: string;
    /** A database on that server with every governance migration applied and nothing else: a template (tests/pg/helpers.ts). */
    pgMigratedTemplate: string;
  }
}

/**
 * One real PostgreSQL server for the whole PostgreSQL suite, stopped and deleted when it ends.
 * Under `npm test` (scripts/test.ts) both PostgreSQL suites share the run's one cluster,
 * handed over as DM_TEST_PG_ADMIN_URL; its owner stops it.
 * The run migrates one database once, which files copy instead of each migrating their own.
 * Vitest runs a global setup once per project (vitest.pg.config.ts has two: files that share worker
 * processes, files that keep their own), all in its main process: they share one server and one template.
 */
export default async function setup(project: TestProject) {
  const run = (held.__dmTestPgRun ??= { users: 0, ready: startRun() });
  run.users++;
  const { adminUrl, template } = await run.ready;
  project.provide("pgAdminUrl", adminUrl);
  project.provide("pgMigratedTemplate", template);
  return async () => {
    if (--run.users > 0) return;
    held.__dmTestPgRun = undefined;
    (await run.ready.catch(() => null))?.server?.stop();
  };
}

type Run = { adminUrl: string; template: string; server: TestPostgres | null };
const held = globalThis as unknown as { __dmTestPgRun?: { users: number; ready: Promise<Run> } };

async function startRun(): Promise<Run> {
  const shared = process.env.DM_TEST_PG_ADMIN_URL;
  const server = shared ? null : await startTestPostgres({ inMemory: true });
  const adminUrl = shared ?? server!.url;
  try {
    return { adminUrl, template: await migratedTemplate(adminUrl), server };
  } catch (e) {
    server?.stop();
    throw e;
  }
}

/** A new database (named as tests/pg/helpers.ts names test databases) with the migrations applied, and no session left on it. */
async function migratedTemplate(adminUrl: string): Promise<string> {
  const url = new URL(adminUrl);
  const name = `t_${randomBytes(6).toString("hex")}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  url.pathname = `/${name}`;
  await closePgHandle(await openPgHandle({ url: url.toString(), max: 1 }));
  return url.toString();
}
