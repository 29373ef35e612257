import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "@/lib/config";

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
