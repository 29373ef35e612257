import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "@/lib/config";
import { dbCommands } from "@/scripts/commands/db-commands";
import { useTempDataDir } from "./helpers";

describe("DATABASE_URL", () => {
  it("is unset by default: the app stays on embedded SQLite", () => {
    const c = parseConfig({});
    expect(c.databaseUrl).toBeUndefined();
    expect(c.pgPoolMax).toBe(10);
  });

  it("accepts postgres:// and postgresql:// URLs and a pool size", () => {
    expect(parseConfig({ DATABASE_URL: "postgres://u:p@db.internal:5432/dualmind" }).databaseUrl).toBe("postgres://u:p@db.internal:5432/dualmind");
    expect(parseConfig({ DATABASE_URL: "postgresql://u@h/d", DUALMIND_PG_POOL_MAX: "25" }).pgPoolMax).toBe(25);
  });

  it("names the variable when it is not a PostgreSQL URL or the pool size is out of range", () => {
    expect(() => parseConfig({ DATABASE_URL: "mysql://root@localhost/db" })).toThrow(ConfigError);
    expect(() => parseConfig({ DATABASE_URL: "mysql://root@localhost/db" })).toThrow(/DATABASE_URL: must be a postgres/);
    expect(() => parseConfig({ DUALMIND_PG_POOL_MAX: "0" })).toThrow(/DUALMIND_PG_POOL_MAX/);
  });
});

describe("dualmind migrate without DATABASE_URL", () => {
  it("migrates governance.db and every store's index.db in DATA_DIR", async () => {
    const { dataDir, cleanup } = useTempDataDir();
    try {
      fs.mkdirSync(path.join(dataDir, "stores", "notes", "memory"), { recursive: true });
      const outs: { human: string; data: unknown }[] = [];
      const code = await dbCommands.find((c) => c.name === "migrate")!.run({ args: [], flags: {}, json: false, out: (human, data) => outs.push({ human, data }) });
      expect(code ?? 0).toBe(0);
      expect(outs[0].data).toEqual({ backend: "sqlite", stores: ["notes"] });
      expect(fs.existsSync(path.join(dataDir, "governance.db"))).toBe(true);
      expect(fs.existsSync(path.join(dataDir, "stores", "notes", "index.db"))).toBe(true);
    } finally {
      cleanup();
    }
  });
});
