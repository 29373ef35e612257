import type { ChartSeries } from "./chart-time-series";

/** The p50 / p95 / p99 lines every latency chart draws, in the same colours everywhere. */
export const LATENCY_LINES: ChartSeries[] = [
  { key: "p50", label: "p50", color: "#0891b2" },
  { key: "p95", label: "p95", color: "#be123c" },
  { key: "p99", label: "p99", color: "#7f1d1d", dashed: true },
];
