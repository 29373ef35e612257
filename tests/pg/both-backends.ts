/**
 * The suites that run on both backends: on SQLite in `npm run test:unit`
 * (vitest.config.ts) and again on PostgreSQL in `npm run test:pg`
 * (vitest.pg.config.ts sets DM_TEST_BACKEND=pg for them; see tests/backend.ts).
 * A suite joins by seeding through tests/backend.ts and being listed here.
 */
export const BOTH_BACKEND_SUITES = [
  "tests/agents-mcp.test.ts",
  "tests/api-authz.test.ts",
  "tests/api-contract.test.ts",
  "tests/api-routes.test.ts",
  "tests/dialectic-annotations.test.ts",
  "tests/graph-api.test.ts",
  "tests/graph-cli.test.ts",
  "tests/health-api.test.ts",
  "tests/index-api.test.ts",
  "tests/ledger-dialectic.test.ts",
  "tests/ledger.test.ts",
  "tests/retrieval-provider-faults.test.ts",
  "tests/retrieval-reasons.test.ts",
  "tests/search-semantic.test.ts",
  // The reliability suite's bad-input table (every /api/v1 route × every bad input: the right 4xx, nothing written).
  "tests/reliability/bad-input.test.ts",
] as const;
