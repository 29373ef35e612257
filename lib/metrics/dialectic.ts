import { governance } from "../backend/governance";
import type { DialecticActivity } from "../governance/dialectic";
import { routeLatencySnapshot, type RouteLatency } from "../http/request-timer";

export type DialecticMetrics = DialecticActivity & {
  /** Session creation, query latency by type (list, detail) and the dialectic API routes and MCP tools, from this process. */
  latency: RouteLatency[];
};

/** Counts from the governance database (SQLite or PostgreSQL); latency from this process's timing table ("dialectic *" entries, routes and tools). */
export async function getDialecticMetrics({ now = Date.now() }: { now?: number } = {}): Promise<DialecticMetrics> {
  return { ...(await governance().getDialecticActivity({ now })), latency: routeLatencySnapshot().filter((r) => r.route.includes("dialectic")) };
}
