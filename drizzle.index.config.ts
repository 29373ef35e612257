import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: ["./lib/db/schema/index.ts", "./lib/db/schema/embed.ts", "./lib/db/schema/graph.ts", "./lib/db/schema/recall.ts"],
  out: "./drizzle/index",
});
