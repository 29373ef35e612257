import { sql } from "drizzle-orm";
import { sqlRun, type Op } from "../db/port";
import { itemsDeletedOp, memoryContradictionsFollowOp, memoryStateFollowsOp, TRASH_STATE_PREFIX } from "./item-state";

/**
 * A deleted memory's governed state waits in the trash with it, on both engines (docs/governed-memory.md): a
 * proposed, rejected or retired memory deleted and then restored from the trash comes back as it was, not active.
 * Its item_state and proposals rows (and its contradictions and forgetting record, whatever its status) move, in the delete's own
 * transaction, to the key of its trash entry (a name no memory path can take: a path's segments start with a letter
 * or digit), and back to the path it is restored to in the restore's. An active memory's state is dropped with it,
 * as before: it comes back active either way, and a fact it stated is not kept waiting in the key's facts.
 */
const trashStateKey = (trashId: string) => `${TRASH_STATE_PREFIX}${trashId}`;

/** In a delete's write, before its rows go: a state other than active moves to the trash entry's key. */
export function* memoryStateToTrashOp({ memoryPath, trashId }: { memoryPath: string; trashId: string }): Op<void> {
  const key = trashStateKey(trashId);
  // Its contradictions wait too, whatever its status (no listing or flag reads a trash key): a restore brings them back.
  yield* memoryContradictionsFollowOp({ from: memoryPath, to: key });
  yield* sqlRun(sql`update proposals set item_id = ${key} where kind = 'memory' and item_id = ${memoryPath} and exists (select 1 from item_state s where s.kind = 'memory' and s.item_id = ${memoryPath} and s.status <> 'active')`);
  yield* sqlRun(sql`update item_state set item_id = ${key} where kind = 'memory' and item_id = ${memoryPath} and status <> 'active'`);
  // What forgetting runs retired of it waits too (a memory restored after a run is not taken again once it is back).
  yield* sqlRun(sql`update forget_retired set item_id = ${key} where kind = 'memory' and item_id = ${memoryPath}`);
}

/** In a restore's write: the state its trash entry kept comes back at the path it is restored to. */
export function* memoryStateFromTrashOp({ trashId, to }: { trashId: string; to: string }): Op<void> {
  yield* memoryStateFollowsOp({ from: trashStateKey(trashId), to });
}

/** Whether an item id is a trash entry's kept state (the review queue leaves those out: a deleted proposal waits in the trash). */
export const TRASH_STATE_LIKE = `${TRASH_STATE_PREFIX}%`;

/**
 * In a purge's write (each path: by hand, past the retention, past the trash's bytes or entries): the state its
 * trash entries kept goes with them, so no row waits for an entry that is gone.
 */
export function* purgeTrashStateOp({ trashIds }: { trashIds: readonly string[] }): Op<void> {
  if (trashIds.length === 0) return;
  yield* itemsDeletedOp({ kind: "memory", ids: trashIds.map(trashStateKey) });
}
