import { letOthersRun } from "../common";
import type Database from "better-sqlite3";
import type { StoreHandle } from "../db/connection";
import { log } from "../log";
import { dropWordLists } from "../retrieval/word-lists";
import { documentFtsReady, rebuildDocumentFtsBatchInTransaction, restartDocumentFtsRebuildInTransaction } from "./document-fts";
import { rebuildMarkers, rebuildProgress, setRebuildRange, type MarkerRange } from "./rebuild-markers";

/**
 * The chunk full-text index is rebuilt in place, in batches by chunk id, when its tokenizer changes (migration 0009
 * recreates it empty and records the range to fill). Each batch is one transaction that indexes the next rows AND
 * moves `fts_rebuilt_through`, so a crash loses at most the batch in flight; two processes take turns batch by batch
 * (the range is read inside the write lock). The whole-document index (document-fts.ts) follows the same way.
 */

/** The tokenizer of `chunks_fts`, as recorded in store meta (`fts_tokenizer`) by the migration that set it. */
export const CHUNK_FTS_TOKENIZER = "porter unicode61 remove_diacritics 2";

/** Chunks indexed per batch: short enough that searches and writes wait little between batches. */
export const FTS_REBUILD_BATCH = 1000;
/** Documents per batch of the whole-document rebuild: a document is several chunks' worth of text. */
const documentBatchFor = (batchSize: number) => Math.max(1, Math.floor(batchSize / 10));

export type FtsRebuildState = {
  /** The index is still being filled: full-text hits cover only `done` of `total` chunks. */
  pending: boolean;
  /** Chunks indexed by the rebuild so far (of those it has to index). */
  done: number;
  /** Chunks the rebuild has to index (those present when the tokenizer changed); 0 when none is pending. */
  total: number;
};

function rebuildRange(handle: StoreHandle): MarkerRange | null {
  return rebuildMarkers(handle.sqlite).chunks;
}

/**
 * How far the chunk FTS rebuild is: `pending: false` (and 0 / 0) when the
 * index is whole. One meta read when nothing is pending; two range counts
 * over the chunk ids while it is.
 */
export function ftsRebuildState(handle: StoreHandle): FtsRebuildState {
  return rebuildProgress({ sqlite: handle.sqlite, range: rebuildRange(handle), countUpTo: "select count(*) from chunks where id <= ?" });
}

/**
 * Index the next batch of the pending rebuild (chunks first, then whole
 * documents), in one write transaction. Returns false when nothing is left
 * (the markers are then gone).
 */
export function rebuildFtsBatch({ handle, batchSize = FTS_REBUILD_BATCH }: { handle: StoreHandle; batchSize?: number }): boolean {
  const { sqlite } = handle;
  return sqlite
    .transaction((): boolean => {
      const range = rebuildRange(handle);
      if (!range) return rebuildDocumentFtsBatchInTransaction({ sqlite, batchSize: documentBatchFor(batchSize) });
      const last = sqlite
        .prepare("select max(id) as id from (select id from chunks where id > ? and id <= ? order by id limit ?)")
        .get(range.through, range.target, batchSize) as { id: number | null };
      if (last.id === null) {
        setRebuildRange({ sqlite, which: "chunks", range: null });
        return rebuildDocumentFtsBatchInTransaction({ sqlite, batchSize: documentBatchFor(batchSize) });
      }
      sqlite.prepare("insert into chunks_fts(rowid, text) select id, text from chunks where id > ? and id <= ? order by id").run(range.through, last.id);
      setRebuildRange({ sqlite, which: "chunks", range: { ...range, through: last.id } });
      return true;
    })
    .immediate();
}

/**
 * Throw the chunk and document FTS indexes away and rebuild them from the chunks, resumably
 * (`reindex --fts-only` on a whole index: e.g. after a suspected corruption).
 * Search sees an index filling up from empty until it is done.
 */
export function restartFtsRebuild({ handle }: { handle: StoreHandle }): void {
  const { sqlite } = handle;
  sqlite
    .transaction(() => {
      sqlite.prepare("insert into chunks_fts(chunks_fts) values ('delete-all')").run();
      setRebuildRange({ sqlite, which: "chunks", range: { through: 0, target: sqlite.prepare("select coalesce(max(id), 0) from chunks").pluck().get() as number } });
      restartDocumentFtsRebuildInTransaction({ sqlite });
      // The word lists derive from these indexes (a tokenizer change is why they are rebuilt): built again after.
      for (const table of ["chunks_fts", "documents_fts"]) dropWordLists({ db: sqlite, table });
    })
    .immediate();
}

/** Run the pending rebuild to the end, yielding to the event loop between batches. */
export async function runFtsRebuild({
  handle,
  batchSize = FTS_REBUILD_BATCH,
  onProgress,
}: {
  handle: StoreHandle;
  batchSize?: number;
  onProgress?: (s: FtsRebuildState) => void;
}): Promise<FtsRebuildState> {
  let state = ftsRebuildState(handle);
  const total = state.total;
  while (rebuildFtsBatch({ handle, batchSize })) {
    state = ftsRebuildState(handle);
    onProgress?.(state);
    await letOthersRun();
  }
  return { pending: false, done: total, total };
}

const g = globalThis as unknown as { __dualmindFtsRebuilds?: WeakSet<Database.Database> };
/** Connections with a rebuild loop running (a reopened store gets a new connection, and a new loop). */
function running(): WeakSet<Database.Database> {
  g.__dualmindFtsRebuilds ??= new WeakSet();
  return g.__dualmindFtsRebuilds;
}

/**
 * Carry a pending FTS rebuild on in the background (one loop per connection). Batches are spaced by an unref'd timer,
 * so requests are served in between and a CLI process is not kept alive (the next open resumes); a closed connection
 * ends the loop.
 */
export function resumeFtsRebuild({ handle }: { handle: StoreHandle }): void {
  if (running().has(handle.sqlite) || (!rebuildRange(handle) && documentFtsReady(handle))) return;
  running().add(handle.sqlite);
  const started = performance.now();
  log("info", "rebuilding the full-text index of a store (tokenizer changed)", { store: handle.store, ...ftsRebuildState(handle) });
  const step = () => {
    let more = false;
    try {
      more = handle.sqlite.open && rebuildFtsBatch({ handle });
    } catch (e) {
      // A busy store (another writer past busy_timeout) is not fatal: the next open tries again.
      log("warn", "full-text index rebuild paused", { store: handle.store, error: e instanceof Error ? e.message : String(e) });
    }
    if (more) {
      setTimeout(step, 0).unref();
      return;
    }
    running().delete(handle.sqlite);
    if (handle.sqlite.open && !rebuildRange(handle) && documentFtsReady(handle)) log("info", "full-text index rebuilt", { store: handle.store, ms: Math.round(performance.now() - started) });
  };
  setTimeout(step, 0).unref();
}
