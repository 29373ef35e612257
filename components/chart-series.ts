import type { ChartSeries } from "./chart-time-series";

/** Percentiles come from a latency histogram: estimates, and every chart and table that shows them says so. */
export const PERCENTILE_NOTE = "p50/p95/p99 are estimates from a latency histogram (placed within the bucket that holds them); the mean is exact.";

/** The p50 / p95 / p99 lines every latency chart draws, in the same colours everywhere. */
export const LATENCY_LINES: ChartSeries[] = [
  { key: "p50", label: "p50 (estimate)", color: "#0891b2" },
  { key: "p95", label: "p95 (estimate)", color: "#be123c" },
  { key: "p99", label: "p99 (estimate)", color: "#7f1d1d", dashed: true },
];

/** Server faults and expected client answers, in % of requests (the unit the Overview uses too). */
export const ERROR_LINES: ChartSeries[] = [
  { key: "errorPct", label: "server faults (5xx)", color: "#dc2626" },
  { key: "clientErrorPct", label: "client answers (4xx: 404, 409, …)", color: "#94a3b8", dashed: true },
];
