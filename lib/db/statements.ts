import type Database from "better-sqlite3";

const cache = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/**
 * A statement prepared once per connection, for fixed SQL that runs on every
 * request: preparing costs more than such a one-row read itself. Only for
 * SQL built from constants and identifiers (the cache is keyed by it); `mode`
 * is keyed too, so callers must not switch it or hold an iterator open.
 */
export function preparedOnce({ sqlite, sql, mode = "rows" }: { sqlite: Database.Database; sql: string; mode?: "rows" | "pluck" | "raw" }): Database.Statement {
  let statements = cache.get(sqlite);
  if (!statements) {
    statements = new Map();
    cache.set(sqlite, statements);
  }
  const key = mode === "rows" ? sql : `${mode}\u0000${sql}`;
  let statement = statements.get(key);
  if (!statement) {
    statement = sqlite.prepare(sql);
    if (mode === "pluck") statement.pluck();
    if (mode === "raw") statement.raw();
    statements.set(key, statement);
  }
  return statement;
}
