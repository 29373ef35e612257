import type Database from "better-sqlite3";

const cache = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/**
 * A statement prepared once per connection, for fixed SQL that runs on every
 * request (a store's readiness checks, remember's row loads): preparing costs
 * more than such a one-row read itself (remember prepared ~40 statements a
 * call, 2.6 ms at 100k thoughts). Only for SQL text built from constants and
 * identifiers (the cache is keyed by it), never from values; `mode` is set
 * once here (the cache is keyed by it too), so callers must not switch it
 * or hold an iterator open on the statement.
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
