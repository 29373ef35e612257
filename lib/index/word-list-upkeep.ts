import { openStoreHandles } from "../db/connection";
import { log } from "../log";
import { preparedOnce } from "../db/statements";
import { getConfig } from "../config";
import { dropWordLists, wordListsStatus, wordListsStep, type RowTexts } from "../retrieval/word-lists";
import type Database from "better-sqlite3";
import { documentFtsValues } from "./document-fts";

/**
 * Keeps each open store's word lists (lib/retrieval/word-lists.ts) between requests: one step per table per turn,
 * the next turn after STEP_GAP_MS or twice the turn's own time (at most a third of the event loop), else after
 * IDLE_MS. A store whose FTS5 indexes are being rebuilt is left until that finishes. A failed step is logged and
 * retried next turn; its transaction left nothing half-written, and queries answer by their other paths meanwhile.
 */
export const STEP_GAP_MS = 250;
export const IDLE_MS = 5_000;
/** Text a step of the document index reads and tokenizes at most (about as much as a step of 1024 chunks; a larger document alone). */
const DOCUMENT_STEP_BYTES = 2 ** 20;

/**
 * The tables kept, each with how its rows' text is read (documents_fts is contentless: rebuilt from the chunks; the
 * others read through their content tables): search's two, and remember's and recall's (change logs: migration 0018).
 */
export const LISTED_TABLES: { table: string; texts?: (sqlite: Database.Database) => RowTexts }[] = [
  { table: "chunks_fts" },
  // One document alone is read whatever its size (ingest bounds it): it is never left out for being large.
  { table: "documents_fts", texts: (sqlite) => (docIds) => documentFtsValues({ sqlite, docIds, maxBytes: docIds.length === 1 ? Number.MAX_SAFE_INTEGER : DOCUMENT_STEP_BYTES }) },
  { table: "thoughts_fts" },
  { table: "kg_node_fts" },
  { table: "reasoning_traces_fts" },
  { table: "learnings_fts" },
];

const g = globalThis as unknown as { __dualmindWordListUpkeep?: NodeJS.Timeout | null };

/** One turn over the open stores; whether any has more work. */
export function wordListUpkeepTurn(): boolean {
  let more = false;
  const minTableRows = getConfig().wordListsMinRows;
  for (const handle of openStoreHandles()) {
    for (const { table, texts } of LISTED_TABLES) {
      try {
        const rebuilding = preparedOnce({ sqlite: handle.sqlite, sql: "select 1 from meta where key in ('fts_rebuild_target', 'docs_fts_rebuild_target')" }).get();
        if (rebuilding) break;
        // Off: lists built earlier are dropped (the change log stops with them), not left to go stale.
        if (minTableRows === 0) {
          if (wordListsStatus({ db: handle.sqlite, table })) dropWordLists({ db: handle.sqlite, table });
        }
        else if (wordListsStep({ db: handle.sqlite, table, texts: texts?.(handle.sqlite), minTableRows }) === "more") more = true;
      } catch (e) {
        log("warn", "word lists: a step failed; tried again next turn", { store: handle.store, table, error: e instanceof Error ? e.message : String(e) });
      }
    }
  }
  return more;
}

export function startWordListUpkeep(): void {
  if (g.__dualmindWordListUpkeep !== undefined) return;
  const turn = () => {
    const started = performance.now();
    const more = wordListUpkeepTurn();
    // At most a third of the event loop while building: the next turn waits twice what this one took.
    g.__dualmindWordListUpkeep = setTimeout(turn, more ? Math.max(STEP_GAP_MS, 2 * (performance.now() - started)) : IDLE_MS);
    g.__dualmindWordListUpkeep.unref();
  };
  g.__dualmindWordListUpkeep = setTimeout(turn, IDLE_MS);
  g.__dualmindWordListUpkeep.unref();
}
