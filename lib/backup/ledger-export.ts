import { getPg } from "../db/pg";
import { getTaskStatusById, listTasksByFilter, type TaskStatus } from "../governance/ledger";

/** v2: the tasks, runs, validations, overrides and artifacts in the API's snake_case (v1 spelled them camelCase). */
export const LEDGER_FORMAT = "dualmind.ledger.v2" as const;
export type LedgerSnapshot = { format: typeof LEDGER_FORMAT; exportedAt: number; tasks: TaskStatus[] };

/** Task keys created up to `now`, newest first, read a page at a time through the ledger's own listing. */
async function collectTaskIds(list: (page: { limit: number; offset: number; to: number }) => Promise<{ tasks: { key: string }[] }>, now: number): Promise<string[]> {
  const ids: string[] = [];
  const limit = 200;
  for (let offset = 0; ; offset += limit) {
    const { tasks } = await list({ limit, offset, to: now });
    ids.push(...tasks.map((t) => t.key));
    if (tasks.length < limit) break;
  }
  return ids;
}

/**
 * Every task with its runs, validations, overrides, artifacts and verdict,
 * oldest first — from the ledger this process uses: governance.db, or with
 * DATABASE_URL the PostgreSQL ledger, read in one repeatable-read read-only
 * transaction (one point in time while other replicas keep writing).
 */
export async function exportLedgerSnapshot({ now = Date.now() }: { now?: number } = {}): Promise<LedgerSnapshot> {
  const pg = getPg();
  if (pg) {
    const { db } = await pg;
    return db.transaction(
      async (tx) => {
        const ids = await collectTaskIds((input) => listTasksByFilter({ input, caller: undefined, handle: { kind: "pg", db: tx } }), now);
        const tasks: TaskStatus[] = [];
        for (const taskId of ids.reverse()) tasks.push(await getTaskStatusById({ taskId, handle: { kind: "pg", db: tx } }));
        return { format: LEDGER_FORMAT, exportedAt: now, tasks };
      },
      { isolationLevel: "repeatable read", accessMode: "read only" },
    );
  }
  const ids = await collectTaskIds(async (input) => listTasksByFilter({ input }), now);
  return { format: LEDGER_FORMAT, exportedAt: now, tasks: ids.reverse().map((taskId) => getTaskStatusById({ taskId })) };
}
