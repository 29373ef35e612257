import { defineConfig } from "drizzle-kit";

/**
 * PostgreSQL store index, one schema per store: `npm run db:generate:pg` writes
 * drizzle/pg/store (applied per store schema by lib/stores/engines/pg.ts).
 */
export default defineConfig({
  dialect: "postgresql",
  schema: "./lib/db/schema/pg/store.ts",
  out: "./drizzle/pg/store",
});
