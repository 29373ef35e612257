/**
 * Files a SQLite store write puts in place only after its transaction commits (lib/index/proposals.ts: a proposed
 * memory). On SQLite a memory is its file, and the scan and watcher index any file they find as an active memory:
 * a file renamed into place inside a transaction that then rolls back (a refused audit append, a full disk) would be
 * an active memory no row says is proposed. Inside `afterCommit`, a memory write stages its file (a hidden temp file
 * beside it) and hands over the rename: it runs once the transaction has committed, and a rollback removes the temp
 * file instead. A rename that fails after the commit leaves the rows without the file (the error says so; a reindex
 * drops them), never the file without its rows. Synchronous, as every SQLite store write is.
 */
type Staged = { place: () => void; abandon: () => void };

let staging: Staged[] | null = null;

/** Hand `staged` to the enclosing `afterCommit`, if there is one (true); else the caller places its file itself. */
export function stageFile({ staged }: { staged: Staged }): boolean {
  if (!staging) return false;
  staging.push(staged);
  return true;
}

/** Run `transaction` (synchronous: it commits or throws), then place the files staged in it, or abandon them all. */
export function afterCommit<T>({ transaction }: { transaction: () => T }): T {
  if (staging) return transaction();
  const staged: Staged[] = [];
  staging = staged;
  let result: T;
  try {
    result = transaction();
  } catch (e) {
    for (const s of staged) s.abandon();
    throw e;
  } finally {
    staging = null;
  }
  let failure: unknown = null;
  for (const s of staged) {
    try {
      s.place();
    } catch (e) {
      failure ??= e;
    }
  }
  if (failure !== null) throw failure;
  return result;
}
