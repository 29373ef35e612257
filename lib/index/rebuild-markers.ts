import type Database from "better-sqlite3";
import { preparedOnce } from "../db/statements";

/**
 * The rebuild markers in a store's meta (the chunk and whole-document full-text ranges, null when no rebuild is
 * pending, and whether the index was ever built from the files), all read by one statement. Outside a transaction
 * the answer is kept while the database is unchanged: within one synchronous run of JavaScript without a check, and
 * in a later run while the connection's data_version (any other connection's commit, in this process or another)
 * and its own count of changed rows are what they were when the markers were read. The writers here forget them at
 * once. Inside a transaction (a rebuild batch under the write lock) they are always read afresh.
 */
export type MarkerRange = { through: number; target: number };
export type RebuildMarkers = { chunks: MarkerRange | null; documents: MarkerRange | null; indexBuilt: boolean };

const BUILT = "index_built_at";
const KEYS = { chunks: ["fts_rebuilt_through", "fts_rebuild_target"], documents: ["docs_fts_rebuilt_through", "docs_fts_rebuild_target"] } as const;

/** The markers a connection last read, the database's state then, and the run of JavaScript they were last valid in. */
type Kept = { markers: RebuildMarkers; version: number; changes: number; generation: number; run: number };
const kept = new WeakMap<Database.Database, Kept>();
/** Bumped when this process changes the markers (forgetRebuildMarkers): everything kept before is stale. */
let generation = 0;
/** The current synchronous run of JavaScript, ended by a microtask. */
let run = 0;
let runEnding = false;

function currentRun(): number {
  if (!runEnding) {
    runEnding = true;
    queueMicrotask(() => {
      run++;
      runEnding = false;
    });
  }
  return run;
}

/** Another connection's commit (in this process or another) moves data_version; this connection's own writes, its count of changed rows. */
function stateOf(sqlite: Database.Database): { version: number; changes: number } {
  const version = preparedOnce({ sqlite, sql: "pragma data_version", mode: "pluck" }).get() as number;
  const changes = preparedOnce({ sqlite, sql: "select total_changes()", mode: "pluck" }).get() as number;
  return { version, changes };
}

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
  const now = currentRun();
  let known = kept.get(sqlite);
  if (known && known.generation === generation && known.run === now) return known.markers;
  // The state before the markers: a commit between the two reads makes the next check read them again.
  const state = stateOf(sqlite);
  if (!known || known.generation !== generation || known.version !== state.version || known.changes !== state.changes) {
    known = { markers: read(sqlite), ...state, generation, run: now };
    kept.set(sqlite, known);
  }
  known.run = now;
  return known.markers;
}

/** After the process changed the markers (on any connection): the next ask reads them. */
export function forgetRebuildMarkers(): void {
  generation++;
}

/**
 * Set one rebuild's range (`which`) in the caller's write transaction: started (through 0, target the last id), moved
 * past a batch, or ended (null: the markers go).
 */
export function setRebuildRange({ sqlite, which, range }: { sqlite: Database.Database; which: keyof typeof KEYS; range: MarkerRange | null }): void {
  const [through, target] = KEYS[which];
  if (range === null) sqlite.prepare("delete from meta where key in (?, ?)").run(through, target);
  else {
    const upsert = sqlite.prepare("insert into meta(key, value) values (?, ?) on conflict(key) do update set value = excluded.value");
    upsert.run(target, String(range.target));
    upsert.run(through, String(range.through));
  }
  forgetRebuildMarkers();
}

/** How far one rebuild is, counted by `countUpTo` (rows with an id at most its parameter): 0 / 0 when none is pending. */
export function rebuildProgress({ sqlite, range, countUpTo }: { sqlite: Database.Database; range: MarkerRange | null; countUpTo: string }): { pending: boolean; done: number; total: number } {
  if (!range) return { pending: false, done: 0, total: 0 };
  const count = sqlite.prepare(countUpTo).pluck();
  return { pending: true, done: count.get(Math.min(range.through, range.target)) as number, total: count.get(range.target) as number };
}
