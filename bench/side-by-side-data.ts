/**
 * Synthetic traces (combinations of realistic parts, deterministic): the
 * recall bench's and the side-by-side bench's. Lib-free but for a type, so a
 * side-by-side worker can load it beside another checkout's lib.
 */
import type { TraceInput } from "../lib/recall/descriptors";

export const VERBS = ["fix", "add", "migrate", "upgrade", "debug", "optimize", "configure", "deploy", "refactor", "test", "remove", "rotate", "backup", "index", "cache"];
export const OBJECTS = ["auth token refresh", "orders API pagination", "invoice schema", "nginx TLS", "checkout e2e test", "dashboard query", "docker healthcheck", "rate limiter", "date parser", "websocket server", "image pipeline", "database credentials", "kubernetes deployment", "payment errors", "sqlite backup", "csv import", "autovacuum", "dark mode", "CORS upload", "report cron", "fts index", "react upgrade", "firewall rules", "bundle size", "chat streaming", "timezone handling", "disk alerts", "sso login", "catalog cache", "signup validation"];
export const QUALIFIERS = ["for tenant", "in staging", "on mobile", "for reports", "behind proxy", "in worker", "for exports", "after release", "in CI", "for admins"];
const SHARDS = ["backend", "frontend", "ops", "database", "search", "mobile", "docs", "photography"];
const ISSUES = ["timeout under load", "race between two writers", "missing index", "wrong timezone offset", "stale cache entry", "permission denied", "out of memory", "retry storm", "schema mismatch", "expired certificate"];

export function syntheticTrace(i: number): TraceInput {
  const pick = <T>(a: T[], salt: number) => a[Math.abs(Math.imul(i + 1, 2654435761) ^ salt) % a.length];
  const object = pick(OBJECTS, 17);
  return {
    intent: { verb: pick(VERBS, 3), target: `${object} ${pick(QUALIFIERS, 29)} #${i}` },
    shard_type: pick(SHARDS, 7),
    key_files: [`src/${object.split(" ")[0].toLowerCase()}/${i % 97}.ts`],
    outcome: i % 3 === 0 ? "failure" : "success",
    key_issue: pick(ISSUES, 11),
    error_tags: [pick(ISSUES, 13).split(" ")[0]],
  };
}

