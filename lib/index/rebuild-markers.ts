import type Database from "better-sqlite3";
import { preparedOnce } from "../db/statements";

/**
 * The rebuild markers in a store's meta (the chunk and whole-document full-text ranges, null when no rebuild is
 * pending, and whether the index was ever built from the files), all read by one statement. Outside a transaction
 * the answer is kept until the current synchronous run of JavaScript ends (this process changes them only through
 * the writers here, which forget it; another process's commit is seen by the next run). Inside a transaction (a
 * rebuild batch under the write lock) they are always read afresh.
 */
export type MarkerRange = { through: number; target: number };
export type RebuildMarkers = { chunks: MarkerRange | null; documents: MarkerRange | null; indexBuilt: boolean };

const BUILT = "index_built_at";
const KEYS = { chunks: ["fts_rebuilt_through", "fts_rebuild_target"], documents: ["docs_fts_rebuilt_through", "docs_fts_rebuild_target"] } as const;

const kept = new Map<Database.Database, RebuildMarkers>();
let clearQueued = false;

function read(sqlite: Database.Database): RebuildMarkers {
  const rows = preparedOnce({ sqlite, sql: "select key, cast(value as integer) as v from meta where key in (?, ?, ?, ?, ?)" }).all(...KEYS.chunks, ...KEYS.documents, BUILT) as { key: string; v: number }[];
  const range = ([through, target]: readonly [string, string]): MarkerRange | null => {
    const t = rows.find((r) => r.key === through)?.v;
    const g = rows.find((r) => r.key === target)?.v;
    return t === undefined || g === undefined ? null : { through: t, target: g };
  };
  return { chunks: range(KEYS.chunks), documents: range(KEYS.documents), indexBuilt: rows.some((r) => r.key === BUILT) };
}

export function rebuildMarkers(sqlite: Database.Database): RebuildMarkers {
  if (sqlite.inTransaction) return read(sqlite);
  let markers = kept.get(sqlite);
  if (!markers) {
    markers = read(sqlite);
    kept.set(sqlite, markers);
    if (!clearQueued) {
      clearQueued = true;
      queueMicrotask(forgetRebuildMarkers);
    }
  }
  return markers;
}

/** After the process changed the markers (on any connection): the next ask reads them. */
export function forgetRebuildMarkers(): void {
  kept.clear();
  clearQueued = false;
}
