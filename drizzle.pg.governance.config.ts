import { defineConfig } from "drizzle-kit";

/** PostgreSQL governance ledger: `npm run db:generate:pg` writes drizzle/pg/governance (applied by lib/db/pg.ts). */
export default defineConfig({
  dialect: "postgresql",
  schema: "./lib/db/schema/pg/governance.ts",
  out: "./drizzle/pg/governance",
});
