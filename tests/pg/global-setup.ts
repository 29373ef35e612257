import type { TestProject } from "vitest/node";
import { startTestPostgres } from "./harness";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of the suite's PostgreSQL server (database `postgres`); each test file makes its own database. */
    pgAdminUrl: string;
  }
}

/** One real PostgreSQL server for the whole PostgreSQL suite, stopped and deleted when it ends. */
export default async function setup(project: TestProject) {
  const server = await startTestPostgres();
  project.provide("pgAdminUrl", server.url);
  return () => server.stop();
}
