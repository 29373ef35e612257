import type { PgStoreTx } from "../db/pg-store";
import { inCallerTx } from "../db/port";
import { recallEventLogged, recallMetrics, type RecallEventInput, type RecallMetricsBucket } from "./events";

/** The recall log's steps for callers holding a PostgreSQL transaction (the repository: ./events.ts). */

/** One recall and its hits, in the caller's transaction. Returns the event id the response carries. */
export function logRecallEventPg({ tx, event }: { tx: PgStoreTx; event: RecallEventInput }): Promise<number> {
  return inCallerTx(tx, recallEventLogged(event));
}

/** Hit rate, precision and latency percentiles per time bucket, in the caller's transaction (see getRecallMetrics, ./events.ts). */
export function getRecallMetricsPg({ tx, ...window }: { tx: PgStoreTx; bucketMs?: number; since?: number; until?: number }): Promise<RecallMetricsBucket[]> {
  return inCallerTx(tx, recallMetrics(window));
}
