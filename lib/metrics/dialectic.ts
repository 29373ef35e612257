import { getDialecticActivity, type DialecticActivity } from "../governance/dialectic";
import { routeLatencySnapshot, type RouteLatency } from "../http/request-timer";

export type DialecticMetrics = DialecticActivity & {
  /** Session creation, query latency by type (list, detail) and the dialectic API routes and MCP tools, from this process. */
  latency: RouteLatency[];
};

/** Counts straight from SQLite; latency from this process's timing table ("dialectic *" entries, routes and tools). */
export function getDialecticMetrics({ now = Date.now() }: { now?: number } = {}): DialecticMetrics {
  return { ...getDialecticActivity({ now }), latency: routeLatencySnapshot().filter((r) => r.route.includes("dialectic")) };
}
