import type { TestProject } from "vitest/node";
import { startTestPostgres } from "./harness";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of the suite's PostgreSQL server (database `postgres`); each test file makes its own database. */
    pgAdminUrl: string;
  }
}

/**
 * One real PostgreSQL server for the whole PostgreSQL suite, stopped and deleted when it ends.
 * Under `npm test` (scripts/test.ts) both PostgreSQL suites share the run's one cluster,
 * handed over as DM_TEST_PG_ADMIN_URL; its owner stops it.
 */
export default async function setup(project: TestProject) {
  const shared = process.env.DM_TEST_PG_ADMIN_URL;
  if (shared) {
    project.provide("pgAdminUrl", shared);
    return;
  }
  const server = await startTestPostgres();
  project.provide("pgAdminUrl", server.url);
  return () => server.stop();
}
