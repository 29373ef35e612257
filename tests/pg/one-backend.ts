/**
 * The unit and reliability files that run once, not on both backends, each
 * with why. Every test file outside tests/pg and tests/e2e is either a
 * shared suite (tests/pg/both-backends.ts) or listed here;
 * tests/pg/both-backends.test.ts holds the two lists to the files on disk,
 * so a new file has to say which it is.
 */
export const ONE_BACKEND_SUITES: Record<string, string> = {
  // No database at all: the same answer whichever backend serves.
  "tests/architecture.test.ts": "no database: reads the source tree's imports",
  "tests/auth-actor.test.ts": "no database: who an audit row names",
  "tests/api-docs-paths.test.ts": "no database: the API docs page's MCP snippet for admins and viewers",
  "tests/auth-redirects.test.ts": "no database: sign-in redirect targets",
  "tests/docs.test.ts": "no database: README and docs against the code",
  "tests/client-bundle.test.ts": "no database: what client components import",
  "tests/cli-commands.test.ts": "no database: which module each CLI command loads",
  "tests/embed-providers.test.ts": "no database: the embedding providers against local stand-ins",
  "tests/format.test.ts": "no database: formatting functions",
  "tests/health-preparers.test.ts": "no database: the charts' preparers",
  "tests/http-gate.test.ts": "no database: access rules and security headers",
  "tests/memory-markdown.test.ts": "no database: markdown rendering",
  "tests/ledger-verdict-label.test.ts": "no database: the verdict badge's words",
  "tests/search-docs-queries.test.ts": "no database: the search bench's query-set builder",
  "tests/search-url.test.ts": "no database: the search page's URLs",
  // SQLite's own machinery; PostgreSQL's counterpart named.
  "tests/backend-selection.test.ts": "choosing the backend from DATABASE_URL, and `migrate` without it (with it: tests/pg/migrate.test.ts)",
  "tests/store-new-database.test.ts": "a new index.db copied from the process's first migrated one (SQLite files); PostgreSQL makes each store's schema by migrating (tests/pg/store-layout.test.ts)",
  "tests/bm25-rows.test.ts": "FTS5's bm25 internals (fts5vocab, %_docsize); PostgreSQL ranks with ts_rank_cd (tests/pg/store-search.test.ts)",
  "tests/fts-same-answers.test.ts": "SQLite's word lists held to FTS5 over real text; PostgreSQL ranks with ts_rank (tests/pg/store-search.test.ts)",
  "tests/word-lists.test.ts": "SQLite's word lists derived from FTS5's index (counts, lengths, change log); PostgreSQL ranks with ts_rank (tests/pg/store-search.test.ts)",
  "tests/agents-backup.test.ts": "online DATA_DIR backup, integrity_check and index.db bundles; on PostgreSQL backups are pg_dump (the CLI's refusal is tested in tests/agents-cli.test.ts)",
  "tests/status-counters.test.ts": "SQLite's live counter triggers against a recount; PostgreSQL counts by query when read, so it has no counters to drift",
  "tests/ann-index.test.ts": "the SQLite store's usearch index files; PostgreSQL uses pgvector's HNSW (tests/pglite-vectors.test.ts)",
  "tests/backup-restore.test.ts": "DATA_DIR backups, staged restores and index.db bundles; on PostgreSQL backups are pg_dump (the CLI's refusal: tests/agents-cli.test.ts)",
  "tests/readonly-disk.test.ts": "read-only index.db, governance.db and DATA_DIR (bind mounts); PostgreSQL keeps nothing in DATA_DIR (tests/pg/no-local-state.test.ts)",
  "tests/mcp-stdio-config.test.ts": "the stdio snippet launches the CLI on a SQLite DATA_DIR from another folder; the same CLI on PostgreSQL is tests/agents-mcp.test.ts's stdio case",
  "tests/retrieval-confidence.test.ts": "no database: confidence bands, weak answers and the fusion policy's arithmetic",
  "tests/data-dir-modes.test.ts": "file modes of DATA_DIR's SQLite files",
  "tests/limits-mcp.test.ts": "the in-process metrics table and SQLite's metric_rollups read back directly; the route-key cap is one function for both backends (lib/metrics/rollups.ts capRollupRoutes, run by both engines)",
  "tests/memory-watch-bounds.test.ts": "the memory folder watch is SQLite's (PostgreSQL keeps memories in a table, with no folder to watch)",
  "tests/store-delete-watch.test.ts": "the memory folder watch and store folders are SQLite's (PostgreSQL drops the store's schema in one transaction: tests/limits-stores.test.ts)",
  "tests/store-handles-held.test.ts": "SQLite's per-store connections closed when idle; PostgreSQL uses one pool",
  "tests/store-looks.test.ts": "SQLite's per-store connections and files looked at by the background loops; PostgreSQL uses one pool and has no store files",
  "tests/limits-visibility.test.ts": "seeds an embed worker's state in SQLite's embed_workers; the redaction is one function (lib/metrics/health.ts redactHealthReport) that the PostgreSQL report goes through too",
  "tests/rebuild-markers.test.ts": "SQLite's FTS5 rebuild markers in a store's meta; PostgreSQL's tsvector is a generated column, nothing to rebuild",
  "tests/query-budget-watchdog.test.ts": "the SQLite query_budget extension's watchdog thread; PostgreSQL's budget is its statement_timeout (tests/pg/search-budget.test.ts)",
  "tests/limits-retention.test.ts": "SQLite's recall log, audit rows and the query-budget extension; the recall retention statements are shared with PostgreSQL (lib/recall/events.ts recallRetentionStatements)",
  "tests/files-containment.test.ts": "memory files on disk are the truth on SQLite; on PostgreSQL a table is (tests/pg/store-memories.test.ts)",
  "tests/foundation.test.ts": "governance.db and index.db pragmas and core ATTACHed read-only; PostgreSQL's in tests/pg/migrate, store-layout and governance-backends",
  "tests/index-crash.test.ts": "SIGKILL during a reindex of index.db; PostgreSQL's kill test is tests/pg/replicas-kill.test.ts",
  "tests/pglite-vectors.test.ts": "already PostgreSQL SQL: pgvector on PGlite (Debian's server has no pgvector)",
  "tests/pglite-graph-vectors.test.ts": "already PostgreSQL SQL: pgvector on PGlite (Debian's server has no pgvector)",
  "tests/reindex-stat.test.ts": "memory files' mtimes on SQLite's disk (on PostgreSQL memories are rows)",
};
