import type { StoreHandle } from "../db/connection";
import { preparedOnce } from "../db/statements";

/**
 * The live status counters of a store (drizzle/index/0010_live_status_counters.sql):
 * a few rows kept exact by triggers, read in one indexed pass instead of
 * scanning the queue and every artifact.
 */
export type KindCounts = { artifacts: number; fresh: number; stale: number; missing: number; pending: number; parked: number };
export type LiveCounts = KindCounts & { byKind: Record<string, KindCounts> };

type CounterRow = { name: string; kind: string; value: number };
const NAME_TO_FIELD: Record<string, keyof KindCounts> = { artifacts: "artifacts", fresh: "fresh", stale: "stale", queue_pending: "pending", queue_parked: "parked" };

export function readLiveCounts({ handle }: { handle: StoreHandle }): LiveCounts {
  const rows = preparedOnce({ sqlite: handle.sqlite, sql: "select name, kind, value from status_counters" }).all() as CounterRow[];
  const zero = (): KindCounts => ({ artifacts: 0, fresh: 0, stale: 0, missing: 0, pending: 0, parked: 0 });
  const total = zero();
  const byKind: Record<string, KindCounts> = {};
  for (const r of rows) {
    const field = NAME_TO_FIELD[r.name];
    if (!field || r.value === 0) continue;
    (byKind[r.kind] ??= zero())[field] += r.value;
    total[field] += r.value;
  }
  for (const k of [total, ...Object.values(byKind)]) k.missing = k.artifacts - k.fresh - k.stale;
  return { ...total, byKind };
}

/** The oldest pending item's enqueue time: one probe of embed_queue_pending_age_idx. */
export function readOldestPendingAt({ handle }: { handle: StoreHandle }): number | null {
  return (preparedOnce({ sqlite: handle.sqlite, sql: "select min(enqueued_at) as t from embed_queue where parked_at is null" }).get() as { t: number | null }).t;
}
