import { getTaskStatusById, listTasksByFilter, type TaskStatus } from "../governance/ledger";
import { assertGovernanceNotOnPostgres } from "../db/pg";

export const LEDGER_FORMAT = "dualmind.ledger.v1" as const;
export type LedgerSnapshot = { format: typeof LEDGER_FORMAT; exportedAt: number; tasks: TaskStatus[] };

/** Every task with its runs, validations, overrides, artifacts and verdict, oldest first. */
export function exportLedgerSnapshot({ now = Date.now() }: { now?: number } = {}): LedgerSnapshot {
  assertGovernanceNotOnPostgres("the ledger snapshot export");
  const ids: string[] = [];
  const page = 200;
  for (let offset = 0; ; offset += page) {
    const { tasks } = listTasksByFilter({ limit: page, offset, to: now });
    ids.push(...tasks.map((t) => t.taskId));
    if (tasks.length < page) break;
  }
  return { format: LEDGER_FORMAT, exportedAt: now, tasks: ids.reverse().map((taskId) => getTaskStatusById({ taskId })) };
}
