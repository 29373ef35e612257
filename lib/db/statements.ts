import type Database from "better-sqlite3";

const cache = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/**
 * A statement prepared once per connection, for fixed SQL that runs on every
 * request (a store's readiness checks): preparing costs more than such a
 * one-row read itself. Only for constant SQL text (the cache is keyed by it),
 * and callers must not switch its mode (pluck, raw, expand) or hold an
 * iterator open on it.
 */
export function preparedOnce(sqlite: Database.Database, sql: string): Database.Statement {
  let statements = cache.get(sqlite);
  if (!statements) {
    statements = new Map();
    cache.set(sqlite, statements);
  }
  let statement = statements.get(sql);
  if (!statement) {
    statement = sqlite.prepare(sql);
    statements.set(sql, statement);
  }
  return statement;
}
