import { defineConfig } from "vitest/config";
import path from "node:path";
import reliability from "./vitest.reliability.config";

/**
 * `npm run test:reliability:pg`: the reliability suite again on PostgreSQL.
 * The global setups start a real PostgreSQL server in a temp dir
 * (tests/pg/global-setup.ts) and build the app once (tests/reliability/global-setup.ts);
 * DM_TEST_BACKEND=pg makes tests/backend.ts give every data dir a fresh
 * database, and DM_TEST_SERVER_BACKEND=pg makes tests/fixtures/next-server.ts
 * hand it to the servers as DATABASE_URL (two servers on one data dir: two
 * replicas on one database).
 * bad-input.test.ts is left out: it runs in-process on PostgreSQL in
 * `npm run test:pg` (tests/pg/both-backends.ts) already; start-config.test.ts
 * too: a setting is refused before any database is opened.
 */
export default defineConfig({
  resolve: { alias: { "@": path.resolve(__dirname) } },
  test: {
    ...reliability.test,
    exclude: ["tests/reliability/bad-input.test.ts", "tests/reliability/start-config.test.ts"],
    globalSetup: ["tests/pg/global-setup.ts", "tests/reliability/global-setup.ts"],
    // The load run is shorter than on SQLite (15 s there): the whole of `npm test` must fit CI on 2 cores.
    env: { ...reliability.test?.env, DM_TEST_BACKEND: "pg", DM_TEST_SERVER_BACKEND: "pg", RELIABILITY_LOAD_MS: "8000" },
  },
});
