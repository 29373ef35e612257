import { openStoreHandles } from "../db/connection";
import { log } from "../log";
import { wordListsStep } from "../retrieval/word-lists";

/**
 * Keeps each open store's chunk word lists (lib/retrieval/word-lists.ts)
 * between requests: one step (a build segment, or a batch of logged changes
 * folded in) per store per turn, a turn every STEP_GAP_MS while any store
 * has work, else every IDLE_MS. A store whose FTS5 index is itself being
 * rebuilt is left until that finishes. A step that fails (another process
 * holds the write lock past the busy timeout, a full disk) is logged and
 * tried again next turn; its transaction left nothing half-written, and
 * queries answer by their other paths meanwhile.
 */
export const STEP_GAP_MS = 250;
export const IDLE_MS = 5_000;

const g = globalThis as unknown as { __dualmindWordListUpkeep?: NodeJS.Timeout | null };

/** One turn over the open stores; whether any has more work. */
export function wordListUpkeepTurn(): boolean {
  let more = false;
  for (const handle of openStoreHandles()) {
    try {
      const rebuilding = handle.sqlite.prepare("select 1 from meta where key in ('fts_rebuild_target', 'fts_rebuilt_through')").get();
      if (rebuilding) continue;
      if (wordListsStep({ db: handle.sqlite, table: "chunks_fts" }) === "more") more = true;
    } catch (e) {
      log("warn", "word lists: a step failed; tried again next turn", { store: handle.store, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return more;
}

export function startWordListUpkeep(): void {
  if (g.__dualmindWordListUpkeep !== undefined) return;
  const turn = () => {
    const more = wordListUpkeepTurn();
    g.__dualmindWordListUpkeep = setTimeout(turn, more ? STEP_GAP_MS : IDLE_MS);
    g.__dualmindWordListUpkeep.unref();
  };
  g.__dualmindWordListUpkeep = setTimeout(turn, IDLE_MS);
  g.__dualmindWordListUpkeep.unref();
}
