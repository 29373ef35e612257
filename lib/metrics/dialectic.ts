import { governance } from "../backend/governance";
import type { DialecticActivity } from "../governance/dialectic";
import { routeLatencySnapshot } from "../http/request-timer";

/** One route's or tool's latency in this process, as the dialectic metrics return it. */
export type DialecticRouteLatency = { route: string; count: number; mean_ms: number; p50_ms: number | null; p95_ms: number | null; p99_ms: number | null; by_status: Record<string, number> };

export type DialecticMetrics = DialecticActivity & {
  /** Session creation, query latency by type (list, detail) and the dialectic API routes and MCP tools, from this process. */
  latency: DialecticRouteLatency[];
};

/** Counts from the governance database (SQLite or PostgreSQL); latency from this process's timing table ("dialectic *" entries, routes and tools). */
export async function getDialecticMetrics({ now = Date.now() }: { now?: number } = {}): Promise<DialecticMetrics> {
  const latency = routeLatencySnapshot()
    .filter((r) => r.route.includes("dialectic"))
    .map((r) => ({ route: r.route, count: r.count, mean_ms: r.meanMs, p50_ms: r.p50Ms, p95_ms: r.p95Ms, p99_ms: r.p99Ms, by_status: r.byStatus }));
  return { ...(await governance().getDialecticActivity({ now })), latency };
}
