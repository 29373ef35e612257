import { INSTALL_ROOT } from "../install-root";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import type Database from "better-sqlite3";
import { getConfig } from "../config";
import { preparedOnce } from "../db/statements";
import { log } from "../log";
import { chmodPrivate, mkdirPrivate } from "../private-fs";

/**
 * The HNSW graph (usearch) of one store, model fingerprint and artifact kind
 * (docs/search-and-retrieval.md). It is derived: the `embeddings` BLOBs stay
 * the truth, and `embedding_log` (appended by triggers in every vector
 * write's transaction) catches it up. The header names the database, model,
 * dimension and log position it covers, so a file from another database or
 * model is never served; files are written temp → fsync → rename, so a crash
 * mid-build leaves no header. While an index is missing or building,
 * `annNeighbours` returns null and callers answer another way.
 */

/** 2: the header names the graph's settings, and a file built with other settings is rebuilt (1 did not; see readHeader). */
const FORMAT_VERSION = 2;
/** What every version-1 file was built with (the settings were constants then, not in the header). */
const VERSION_1_SETTINGS = { quantization: "i8", connectivity: 16, expansionAdd: 128 };
/**
 * How the graph is built: int8 codes, M=16, expansion_add 384. The wide
 * linking list is what carries recall at 1M near-duplicate vectors; f16 with
 * M=32 bought little for twice the memory (bench/results/latest.md, "1M
 * vectors: graph settings probed").
 */
const QUANTIZATION = "i8"; // u.ScalarKind.I8 in newIndex
const CONNECTIVITY = 16;
const EXPANSION_ADD = 384;
/** Candidate list (ef) of a search: a bigger graph needs a deeper search for the same recall, so it grows geometrically from 256 at 100k vectors to 512 at 1M. */
const MIN_SEARCH_DEPTH = 256;
const MAX_SEARCH_DEPTH = 512;
const MIN_DEPTH_SIZE = 100_000;
const MAX_DEPTH_SIZE = 1_000_000;

/** The candidate list a search of a graph of `size` vectors walks (see above). */
export function searchDepth(size: number): number {
  if (!(size > MIN_DEPTH_SIZE)) return MIN_SEARCH_DEPTH;
  if (size >= MAX_DEPTH_SIZE) return MAX_SEARCH_DEPTH;
  const t = Math.log(size / MIN_DEPTH_SIZE) / Math.log(MAX_DEPTH_SIZE / MIN_DEPTH_SIZE);
  return Math.round(MIN_SEARCH_DEPTH * (MAX_SEARCH_DEPTH / MIN_SEARCH_DEPTH) ** t);
}

/** One thread per add: usearch's concurrent add can leave a node no search returns (unum-cloud/USearch#735). */
const ADD_THREADS = 1;
/** Most vectors read and added in one native call; each page is sized to fit the slice (see pageFor). */
const BUILD_PAGE = 10_000;
/** Fewest per page, so a slow first page still makes progress. */
const MIN_PAGE = 64;
/** Cost per vector (ms) assumed until this process has measured one; an int8 add costs about this on a small machine. */
const FIRST_MS_PER_VECTOR = 1;
/** Time one query may spend building or catching up before answering another way: background ticks do the rest, so no request waits for a build. */
const REQUEST_SLICE_MS = 10;
/** Time one background tick builds; requests wait at most this long behind it. */
const BACKGROUND_SLICE_MS = 50;
/** Log rows applied since the last persist that make the file worth rewriting (at least; scaled with size). */
const PERSIST_AFTER_CHANGES = 1_000;

type Usearch = typeof import("usearch");
type UsearchIndex = InstanceType<Usearch["Index"]>;

let usearchModule: Usearch | null | undefined;
/** The native addon, or null where it cannot load (vector search then keeps its other paths). */
function usearch(): Usearch | null {
  if (usearchModule === undefined) {
    try {
      usearchModule = createRequire(path.join(INSTALL_ROOT, "package.json"))("usearch") as Usearch;
    } catch (e) {
      log("warn", "usearch failed to load; vector search stays on SimHash + rescore", { reason: e instanceof Error ? e.message : String(e) });
      usearchModule = null;
    }
  }
  return usearchModule;
}

export type AnnHeader = {
  version: number;
  dbId: string;
  fingerprintId: string;
  kind: string;
  dim: number;
  quantization: string;
  connectivity: number;
  expansionAdd: number;
  /** embedding_log rows up to this seq are in the file. */
  seq: number;
  count: number;
  /** The usearch file this header vouches for (a new name per write, so a header never points at a half-written file). */
  file: string;
};

type AnnState = {
  dbId: string;
  dir: string;
  base: string;
  fingerprintId: string;
  kind: string;
  dim: number;
  index: UsearchIndex;
  /** embedding_log applied through this seq. */
  seq: number;
  /** Build scan position (embedding id), or null once every stored vector has been added. */
  cursor: number | null;
  changesSincePersist: number;
  /** Loaded from a file whose catch-up is still under way: its size is checked against the stored vectors once current. */
  checkCountWhenCurrent?: boolean;
  background?: NodeJS.Timeout;
  /** Measured cost of adding one vector (moving average), so a page fits what is left of a slice. */
  msPerVector?: number;
};
/** Below the size threshold: remembered so small sets do not count rows on every query. */
type SmallSet = { small: true; dbId: string; count: number; seq: number };

const g = globalThis as unknown as { __dualmindAnn?: Map<string, AnnState | SmallSet> };
function registry(): Map<string, AnnState | SmallSet> {
  g.__dualmindAnn ??= new Map();
  return g.__dualmindAnn;
}

/** Where a KNN reads (mirrors vector-index.ts KnnSource; kept structural to avoid an import cycle). */
export type AnnSource = { db: Database.Database; schema: "main" | "core" };

const dbFiles = new WeakMap<Database.Database, Map<string, string>>();
function dbFileOf({ db, schema }: AnnSource): string | null {
  let byName = dbFiles.get(db);
  // Re-read when the schema is new to the cache (core is attached to reader connections after they open).
  if (!byName?.has(schema)) {
    byName = new Map((db.pragma("database_list") as { name: string; file: string }[]).map((r) => [r.name, r.file]));
    dbFiles.set(db, byName);
  }
  return byName.get(schema) || null;
}

export function annDirOf(dbFile: string): string {
  return path.join(path.dirname(dbFile), "index.ann");
}

function baseName(fingerprintId: string, kind: string): string {
  if (!/^[0-9a-f]{16}$/.test(fingerprintId) || !/^[a-z][a-z0-9_]*$/.test(kind)) throw new Error(`bad ann key ${fingerprintId}/${kind}`);
  return `${fingerprintId}-${kind}`;
}

function metaValue({ db, schema }: AnnSource, key: string): string | undefined {
  return (preparedOnce({ sqlite: db, sql: `select value from ${schema}.meta where key = ?` }).get(key) as { value: string } | undefined)?.value;
}

/** The last seq the log ever issued (sqlite_sequence keeps it after pruning empties the table). */
function logHead({ db, schema }: AnnSource): number {
  return (preparedOnce({ sqlite: db, sql: `select coalesce((select seq from ${schema}.sqlite_sequence where name = 'embedding_log'), 0) as s` }).get() as { s: number }).s;
}

function countVectors({ db, schema }: AnnSource, fingerprintId: string, kind: string): number {
  return (db.prepare(`select count(*) as n from ${schema}.embeddings where fingerprint_id = ? and kind = ?`).get(fingerprintId, kind) as { n: number }).n;
}

function newIndex(u: Usearch, dim: number): UsearchIndex {
  return new u.Index({ dimensions: dim, metric: u.MetricKind.Cos, quantization: u.ScalarKind.I8, connectivity: CONNECTIVITY, expansion_add: EXPANSION_ADD, expansion_search: MIN_SEARCH_DEPTH, multi: false });
}

function fsyncPath(p: string): void {
  const fd = fs.openSync(p, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function readHeader(dir: string, base: string): AnnHeader | null {
  try {
    const h = JSON.parse(fs.readFileSync(path.join(dir, `${base}.json`), "utf8")) as AnnHeader;
    // A version-1 header never named its settings: it gets the ones every version-1 file was built with (expansion_add 128,
    // not today's 384, so such a file is rebuilt once), and one that named others still fails the check.
    if (h.version === 1) return { ...VERSION_1_SETTINGS, ...h };
    return h.version === FORMAT_VERSION ? h : null;
  } catch {
    return null;
  }
}

export type PersistStage = "index-written" | "index-renamed" | "header-written" | "done";

/** Write the index, then the header that names it; each temp → fsync → rename, then drop files no header names. */
function persist(st: AnnState, onStage?: (stage: PersistStage) => void): void {
  mkdirPrivate(st.dir);
  const file = `${st.base}.${st.seq}.usearch`;
  const tmp = path.join(st.dir, `${file}.tmp`);
  st.index.save(tmp);
  chmodPrivate(tmp);
  fsyncPath(tmp);
  onStage?.("index-written");
  fs.renameSync(tmp, path.join(st.dir, file));
  onStage?.("index-renamed");
  const header: AnnHeader = { version: FORMAT_VERSION, dbId: st.dbId, fingerprintId: st.fingerprintId, kind: st.kind, dim: st.dim, quantization: QUANTIZATION, connectivity: CONNECTIVITY, expansionAdd: EXPANSION_ADD, seq: st.seq, count: st.index.size(), file };
  const headerTmp = path.join(st.dir, `${st.base}.json.tmp`);
  fs.writeFileSync(headerTmp, JSON.stringify(header), { mode: 0o600 });
  fsyncPath(headerTmp);
  onStage?.("header-written");
  fs.renameSync(headerTmp, path.join(st.dir, `${st.base}.json`));
  fsyncPath(st.dir);
  removeUnnamedFiles(st.dir, st.base, file);
  st.changesSincePersist = 0;
  onStage?.("done");
}

/** Old index files and temp files a crash left behind (whatever the current header does not name). */
function removeUnnamedFiles(dir: string, base: string, keep: string | null): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) if (n.startsWith(`${base}.`) && n !== `${base}.json` && n !== keep) fs.rmSync(path.join(dir, n), { force: true });
}

/** The file's index if its header is for this database, model and kind and the log still holds what came after it. */
function loadFromFile(src: AnnSource, u: Usearch, st: Omit<AnnState, "index" | "seq" | "cursor" | "changesSincePersist">): AnnState | null {
  const h = readHeader(st.dir, st.base);
  if (!h) return null;
  const prunedThrough = Number(metaValue(src, "embedding_log_pruned_through") ?? 0);
  if (h.dbId !== st.dbId || h.fingerprintId !== st.fingerprintId || h.kind !== st.kind || h.dim !== st.dim) return null;
  // Built with other graph settings: the codes or links differ, so the file is rebuilt, never served with the new ones.
  if (h.quantization !== QUANTIZATION || h.connectivity !== CONNECTIVITY || h.expansionAdd !== EXPANSION_ADD) return null;
  // A header past the log's head belongs to a database that was rolled back or replaced.
  if (h.seq > logHead(src) || h.seq < prunedThrough) return null;
  const index = newIndex(u, st.dim);
  try {
    index.load(path.join(st.dir, h.file));
  } catch (e) {
    log("warn", "vector index file unreadable; rebuilding from the stored vectors", { file: h.file, reason: e instanceof Error ? e.message : String(e) });
    return null;
  }
  if (index.size() !== h.count) return null;
  return { ...st, index, seq: h.seq, cursor: null, changesSincePersist: 0 };
}

/** Add (or replace) vectors by embedding id. */
function upsert(st: AnnState, rows: { id: number; vector: Buffer }[]): void {
  if (rows.length === 0) return;
  const keys = new BigUint64Array(rows.length);
  const flat = new Float32Array(rows.length * st.dim);
  rows.forEach((r, i) => {
    keys[i] = BigInt(r.id);
    flat.set(new Float32Array(r.vector.buffer.slice(r.vector.byteOffset, r.vector.byteOffset + r.vector.byteLength)), i * st.dim);
  });
  const present = st.index.contains(keys) as boolean[];
  const replaced = keys.filter((_, i) => present[i]);
  if (replaced.length) st.index.remove(replaced);
  st.index.add(keys, flat, ADD_THREADS);
}

/**
 * How many vectors fit in what is left of a slice: an add is one synchronous
 * native call, so a fixed page of 10 000 held the event loop for seconds on a
 * loaded machine. Pages follow the measured cost per vector.
 */
function pageFor(st: AnnState, leftMs: number): number {
  if (!Number.isFinite(leftMs)) return BUILD_PAGE;
  return Math.max(MIN_PAGE, Math.min(BUILD_PAGE, Math.floor(leftMs / (st.msPerVector ?? FIRST_MS_PER_VECTOR))));
}

/** upsert, timed: feeds pageFor. */
function timedUpsert(st: AnnState, rows: { id: number; vector: Buffer }[]): void {
  const t0 = performance.now();
  upsert(st, rows);
  if (rows.length === 0) return;
  const per = (performance.now() - t0) / rows.length;
  st.msPerVector = st.msPerVector === undefined ? per : 0.7 * st.msPerVector + 0.3 * per;
}

/** One slice of the initial scan over the stored vectors; true when the scan is done. */
function buildStep(src: AnnSource, st: AnnState, budgetMs: number): boolean {
  const page = src.db.prepare(`select id, vector from ${src.schema}.embeddings where fingerprint_id = ? and kind = ? and id > ? order by id limit ?`);
  const start = performance.now();
  while (st.cursor !== null) {
    const rows = page.all(st.fingerprintId, st.kind, st.cursor, pageFor(st, budgetMs - (performance.now() - start))) as { id: number; vector: Buffer }[];
    if (rows.length === 0) {
      st.cursor = null;
      break;
    }
    timedUpsert(st, rows);
    st.cursor = rows[rows.length - 1].id;
    if (performance.now() - start > budgetMs) break;
  }
  return st.cursor === null;
}

/**
 * Replay the log after st.seq: each touched id takes its current stored
 * vector, or leaves the index if it has none. If another process pruned
 * rows this copy never applied, it cannot be caught up: it starts building
 * again (cursor 0), and callers answer another way meanwhile.
 */
function catchUp(src: AnnSource, st: AnnState, budgetMs = Infinity): boolean {
  const head = logHead(src);
  if (head <= st.seq) return true;
  if (st.seq < Number(metaValue(src, "embedding_log_pruned_through") ?? 0)) {
    const u = usearch();
    if (!u) return true;
    st.index = newIndex(u, st.dim);
    st.cursor = 0;
    st.seq = head;
    return true;
  }
  // A slice replays at most what fits its budget (log rows bound the vectors touched); the rest waits for the next.
  const upto = Number.isFinite(budgetMs) ? Math.min(head, st.seq + pageFor(st, budgetMs)) : head;
  const rows = preparedOnce({
    sqlite: src.db,
    sql: `select l.embedding_id as id, e.vector as vector from (select distinct embedding_id from ${src.schema}.embedding_log where seq > ? and seq <= ? and fingerprint_id = ? and kind = ?) l
       left join ${src.schema}.embeddings e on e.id = l.embedding_id and e.fingerprint_id = ? and e.kind = ?`,
  }).all(st.seq, upto, st.fingerprintId, st.kind, st.fingerprintId, st.kind) as { id: number; vector: Buffer | null }[];
  const gone = BigUint64Array.from(rows.filter((r) => !r.vector), (r) => BigInt(r.id));
  if (gone.length) st.index.remove(gone);
  timedUpsert(st, rows.filter((r): r is { id: number; vector: Buffer } => !!r.vector));
  st.seq = upto;
  st.changesSincePersist += rows.length;
  return upto === head;
}

/** Drop log rows every index file of this store has covered, and say how far (so a process behind that point reloads). */
function pruneLog(src: AnnSource, dir: string): void {
  if (src.schema !== "main" || src.db.readonly) return;
  // Never past what this process's own copies (built or building, saved or not) have applied.
  let covered = Infinity;
  for (const st of registry().values()) if (!("small" in st) && st.dir === dir) covered = Math.min(covered, st.seq);
  for (const n of fs.readdirSync(dir)) {
    if (!n.endsWith(".json")) continue;
    const h = readHeader(dir, n.slice(0, -5));
    if (h) covered = Math.min(covered, h.seq);
  }
  if (Number.isFinite(covered)) pruneLogThrough(src, covered);
}

/** Drop the log's rows through `seq` and record how far (the marker only ever moves forward). */
function pruneLogThrough(src: AnnSource, seq: number): void {
  src.db.transaction(() => {
    src.db.prepare("delete from embedding_log where seq <= ?").run(seq);
    src.db.prepare("insert into meta(key, value) values ('embedding_log_pruned_through', ?) on conflict(key) do update set value = excluded.value where cast(value as integer) < cast(excluded.value as integer)").run(String(seq));
  })();
}

/**
 * A store whose every vector set is below the threshold keeps no index, so no
 * save ever prunes its log: prune it here (when such a set is first seen, and
 * again each time the log has grown past what it could hold). Files left by a
 * set that has since shrunk below the threshold are stale and would pin the
 * log: they go too. Any process still building from an older point sees the
 * pruned marker and starts again, as after any prune.
 */
function pruneWhenAllSmall(src: AnnSource, dir: string, min: number): void {
  if (src.schema !== "main" || src.db.readonly) return;
  for (const st of registry().values()) if (!("small" in st) && st.dir === dir) return;
  const largest = (src.db.prepare(`select coalesce(max(n), 0) as n from (select count(*) as n from main.embeddings group by fingerprint_id, kind)`).get() as { n: number }).n;
  if (largest >= min) return;
  if (fs.existsSync(dir)) for (const n of fs.readdirSync(dir)) fs.rmSync(path.join(dir, n), { force: true });
  pruneLogThrough(src, logHead(src));
}

/** Enough applied since the last save to rewrite the file (it is caught up from the log on load anyway). */
function worthSaving(st: AnnState): boolean {
  return st.changesSincePersist >= Math.max(PERSIST_AFTER_CHANGES, st.index.size() / 10);
}

function persistAndPrune(src: AnnSource, st: AnnState): void {
  try {
    persist(st);
    pruneLog(src, st.dir);
  } catch (e) {
    // The index in memory stays right; only the copy on disk is older (it is caught up on the next load).
    log("warn", "vector index not saved", { dir: st.dir, reason: e instanceof Error ? e.message : String(e) });
  }
}

/**
 * For a copy loaded from a file, once it is current: whether it holds as many
 * vectors as are stored (false: it disagrees, and starts building afresh).
 * True for every other copy.
 */
function countChecked(src: AnnSource, st: AnnState): boolean {
  if (!st.checkCountWhenCurrent) return true;
  st.checkCountWhenCurrent = false;
  if (st.index.size() === countVectors(src, st.fingerprintId, st.kind)) return true;
  log("warn", "vector index file disagrees with the stored vectors; rebuilding", { dir: st.dir, base: st.base });
  const u = usearch();
  if (u) st.index = newIndex(u, st.dim);
  st.cursor = 0;
  st.seq = logHead(src);
  return false;
}

/** Keep building between requests (the event loop is free between slices), and save when done. */
function scheduleBackgroundBuild(src: AnnSource, st: AnnState, key: string): void {
  if (st.background) return;
  st.background = setTimeout(() => {
    st.background = undefined;
    if (!src.db.open || registry().get(key) !== st) return;
    try {
      const current = buildStep(src, st, BACKGROUND_SLICE_MS) && catchUp(src, st, BACKGROUND_SLICE_MS) && countChecked(src, st);
      if (!current || st.cursor !== null) scheduleBackgroundBuild(src, st, key);
      else if (!readHeader(st.dir, st.base) || worthSaving(st)) persistAndPrune(src, st);
    } catch (e) {
      log("warn", "vector index build step failed; will retry on the next query", { reason: e instanceof Error ? e.message : String(e) });
    }
  }, 10);
  st.background.unref();
}

/** The state for (source, fingerprint, kind): from memory, from its file (caught up), or a new empty one to build; null where no index can serve. */
function stateFor({ src, fingerprintId, kind, dim }: { src: AnnSource; fingerprintId: string; kind: string; dim: number }): { key: string; state: AnnState | SmallSet } | null {
  const u = usearch();
  const dbFile = dbFileOf(src);
  if (!u || !dbFile) return null;
  const dbId = metaValue(src, "ann_db_id");
  if (!dbId) return null;
  const base = baseName(fingerprintId, kind);
  const key = `${dbFile}\0${base}`;
  const reg = registry();
  let st = reg.get(key);
  const min = getConfig().annMinVectors;
  if (st && st.dbId !== dbId) st = undefined;
  else if (st && "small" in st) {
    // Each new vector is at least one log row: the set cannot have reached the threshold before the log grew that much.
    if (logHead(src) - st.seq < min - st.count) return { key, state: st };
    st = undefined;
  } else if (st && (st.dim !== dim || st.seq < Number(metaValue(src, "embedding_log_pruned_through") ?? 0))) {
    // Another process pruned log rows this copy never applied: start again from the file.
    st = undefined;
  }
  if (st) return { key, state: st };
  forgetKey(key);
  const seq = logHead(src);
  const count = countVectors(src, fingerprintId, kind);
  if (count < min) {
    const small: SmallSet = { small: true, dbId, count, seq };
    reg.set(key, small);
    pruneWhenAllSmall(src, annDirOf(dbFile), min);
    return { key, state: small };
  }
  const dir = annDirOf(dbFile);
  let state = loadFromFile(src, u, { dbId, dir, base, fingerprintId, kind, dim });
  if (state) {
    // A long backlog behind the file is replayed a slice at a time (here, per query and in the background), not all at once on this request.
    state.checkCountWhenCurrent = true;
    if (catchUp(src, state, REQUEST_SLICE_MS) && !countChecked(src, state)) state = null;
  }
  if (!state) {
    removeUnnamedFiles(dir, base, readHeader(dir, base)?.file ?? null);
    state = { dbId, dir, base, fingerprintId, kind, dim, index: newIndex(u, dim), seq, cursor: 0, changesSincePersist: 0 };
  }
  reg.set(key, state);
  return { key, state };
}

function forgetKey(key: string): void {
  const st = registry().get(key);
  if (st && !("small" in st) && st.background) clearTimeout(st.background);
  registry().delete(key);
}

/**
 * Up to `want` embedding ids closest to the query (cosine on int8 codes,
 * closest first, from a candidate list of searchDepth(size)) and the index's size, or null when no index serves this set (too small, still
 * building, usearch missing): the caller then answers another way. A build
 * in progress advances a slice per call and in the background.
 */
export function annNeighbours({ source, fingerprintId, kind, query, want }: { source: AnnSource; fingerprintId: string; kind: string; query: Float32Array; want: number }): { ids: number[]; size: number } | null {
  const r = stateFor({ src: source, fingerprintId, kind, dim: query.length });
  if (!r || "small" in r.state) return null;
  const st = r.state;
  if (st.cursor !== null) {
    if (!buildStep(source, st, REQUEST_SLICE_MS) || !catchUp(source, st, REQUEST_SLICE_MS)) {
      scheduleBackgroundBuild(source, st, r.key);
      return null;
    }
    if (st.cursor === null) persistAndPrune(source, st);
  } else {
    // A long backlog (a separate worker embedded thousands, or a file loaded behind the log) is replayed a slice
    // per query and between requests; until it is current, the caller answers another way.
    if (!catchUp(source, st, REQUEST_SLICE_MS) || !countChecked(source, st)) {
      scheduleBackgroundBuild(source, st, r.key);
      return null;
    }
    if (st.cursor === null && worthSaving(st)) persistAndPrune(source, st);
  }
  if (st.cursor !== null) {
    scheduleBackgroundBuild(source, st, r.key);
    return null;
  }
  if (st.index.size() === 0) return null;
  // want 0: only whether the index serves, and its size (a filter sizes its search by it).
  if (want <= 0) return { ids: [], size: st.index.size() };
  const size = st.index.size();
  // usearch searches with a candidate list of max(expansion_search, wanted): asking for the depth sets it per query.
  const m = st.index.search(query, Math.min(Math.max(want, searchDepth(size)), size), 1);
  return { ids: Array.from(m.keys.subarray(0, Math.min(want, size)), Number), size };
}

export type AnnBuildProgress = { phase: "scanning"; added: number; total: number } | { phase: "saving"; stage: PersistStage };

/**
 * Bring the index to completion (building, or loading its file and catching
 * up) and save it: CLI rebuilds, benchmarks, tests. `fresh` discards the
 * copy in memory and on disk first. Returns its size (0: below the
 * threshold or unavailable).
 */
export function buildAnnIndex({ source, fingerprintId, kind, dim, fresh = false, onProgress }: { source: AnnSource; fingerprintId: string; kind: string; dim: number; fresh?: boolean; onProgress?: (p: AnnBuildProgress) => void }): number {
  const dbFile = dbFileOf(source);
  if (fresh && dbFile) forgetAnnIndex({ dbFile, fingerprintId, kind, removeFiles: true });
  const r = stateFor({ src: source, fingerprintId, kind, dim });
  if (!r || "small" in r.state) return 0;
  const st = r.state;
  let building = st.cursor !== null;
  const total = countVectors(source, fingerprintId, kind);
  for (;;) {
    while (st.cursor !== null) {
      buildStep(source, st, 0);
      onProgress?.({ phase: "scanning", added: st.index.size(), total });
    }
    catchUp(source, st);
    if (st.cursor !== null) continue;
    if (countChecked(source, st)) break;
    building = true; // the loaded file disagreed with the stored vectors: built afresh
  }
  if (building || st.changesSincePersist > 0 || !readHeader(st.dir, st.base)) {
    persist(st, (stage) => onProgress?.({ phase: "saving", stage }));
    pruneLog(source, st.dir);
  }
  return st.index.size();
}

/** Forget the in-memory copy (and optionally the files) of one index. */
export function forgetAnnIndex({ dbFile, fingerprintId, kind, removeFiles }: { dbFile: string; fingerprintId: string; kind: string; removeFiles: boolean }): void {
  const base = baseName(fingerprintId, kind);
  forgetKey(`${dbFile}\0${base}`);
  if (removeFiles) {
    const dir = annDirOf(dbFile);
    fs.rmSync(path.join(dir, `${base}.json`), { force: true });
    removeUnnamedFiles(dir, base, null);
  }
}

/** After a re-embed switched models: drop every index of the other fingerprints, in memory and on disk. */
export function dropAnnIndexesExcept({ source, keepFingerprintId }: { source: AnnSource; keepFingerprintId: string }): void {
  const dbFile = dbFileOf(source);
  if (!dbFile) return;
  for (const key of [...registry().keys()]) {
    const [file, base] = key.split("\0");
    if (file !== dbFile || base.startsWith(`${keepFingerprintId}-`)) continue;
    forgetKey(key);
  }
  const dir = annDirOf(dbFile);
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) if (!n.startsWith(`${keepFingerprintId}-`)) fs.rmSync(path.join(dir, n), { force: true });
}

/** Drop every in-memory index (a process restart, for tests and benchmarks); files stay. */
export function closeAnnIndexes(): void {
  for (const st of registry().values()) if (!("small" in st) && st.background) clearTimeout(st.background);
  registry().clear();
}

/** What the index of (source, fingerprint, kind) holds right now, for status and tests. */
export function annIndexInfo({ source, fingerprintId, kind }: { source: AnnSource; fingerprintId: string; kind: string }): { state: "none" | "small" | "building" | "ready"; size: number; seq: number; file: AnnHeader | null } {
  const dbFile = dbFileOf(source);
  if (!dbFile) return { state: "none", size: 0, seq: 0, file: null };
  const base = baseName(fingerprintId, kind);
  const st = registry().get(`${dbFile}\0${base}`);
  const file = readHeader(annDirOf(dbFile), base);
  if (!st) return { state: "none", size: 0, seq: 0, file };
  if ("small" in st) return { state: "small", size: st.count, seq: st.seq, file };
  return { state: st.cursor === null ? "ready" : "building", size: st.index.size(), seq: st.seq, file };
}
