import fs from "node:fs";
import path from "node:path";
import { eq, isNotNull, sql } from "drizzle-orm";
import { storeDir, type StoreHandle } from "../db/connection";
import { preparedOnce } from "../db/statements";
import { categories, memories, meta } from "../db/schema/index";
import { AppError } from "../errors";
import { log } from "../log";
import { CHUNKING_VERSION } from "./chunking";
import { readFileNoFollow } from "./contained-fs";
import { listIndexableFiles, type UnindexableFile } from "./files";
import { memoryTextProblem } from "./frontmatter";
import { decodeText, deleteDocumentByPath, ingestDocument } from "./ingest";
import { resumeFtsRebuild } from "./fts-rebuild";
import { forgetRebuildMarkers, rebuildMarkers } from "./rebuild-markers";
import { ensureCategoryOp, indexMemoryOp, pruneAllCategoriesOp, removeMemoryOp } from "./memories";
import { write } from "../db/port";
import { sha256Hex, letOthersRun } from "../common";
import { mirroringDisk, recountStoreUsage } from "../db/store-usage";

export type ReindexCounts = { scanned: number; added: number; changed: number; unchanged: number; removed: number; skipped: number };
/** What a reindex did to one kind of file: documents (source roots, API-less files) or memories (memory/*.md). */
export type ReindexKindCounts = { scanned: number; added: number; changed: number; unchanged: number; removed: number };
export type ReindexResult = {
  /** The same counts split by kind (null on jobs recorded before the split); `skipped` is only in the totals. */
  by_kind: { documents: ReindexKindCounts; memories: ReindexKindCounts } | null;
  store: string;
  counts: ReindexCounts;
  /** `symlink`: links under a scanned folder, never followed. */
  skipped_by: { binary: number; oversized: number; bad_name: number; symlink: number };
  /** Skipped links that lead outside their folder (or nowhere), e.g. `memory/notes/passwd.md`; at most 100. */
  links_outside_root: string[];
  /** Files under memory/ that cannot be indexed as they are, with the reason (name, size, encoding, frontmatter, conflict markers); at most 100. */
  unindexable: UnindexableFile[];
  /** Paths this run added, changed or removed (at most 20): what a file-change audit row names. */
  changed_paths: string[];
  duration_ms: number;
};
export type ReindexProgress = { phase: "scanning" | "writing"; done: number; total: number };

type KnownDocument = { path: string; docId: number; sha256: string; bytes: number; mtime: number; ctime: number | null; inode: number | null; indexedAt: number };

/** What a stat says about a file: size, mtime and ctime (ms), inode. */
type FileStat = { size: number; mtime: number; ctime: number; ino: number };

type Pending = { docPath: string; abs: string; memoryPath: string | null; text: string; stat: FileStat; readAt: number; isNew: boolean };

/**
 * How far a file's content must have been read after its last change (the later of mtime and ctime) for its stat to
 * vouch for it later: an edit keeping size, mtime and ctime can only follow a read within one timestamp tick, and
 * coarse filesystems tick every 1-2 s; a "racy" read (sooner) is re-read and re-hashed next time.
 */
export const RACY_MS = 3_000;

/** The later of a file's mtime and ctime: any write, rename over it, chmod or utimes moves ctime. */
const changedAt = (s: { mtime: number; ctime: number }) => Math.max(s.mtime, s.ctime);

/**
 * Whether a file's stat vouches for its indexed row without reading it: same size, mtime, ctime (ms) and inode as at
 * its last non-racy read. mtime alone can be put back (`touch -d`); ctime cannot, and a replaced file has a new inode.
 */
function statVouches(prev: KnownDocument, f: FileStat): boolean {
  if (prev.ctime === null || prev.inode === null) return false;
  return prev.bytes === f.size && prev.mtime === f.mtime && prev.ctime === f.ctime && prev.inode === f.ino && prev.indexedAt - changedAt({ mtime: prev.mtime, ctime: prev.ctime }) >= RACY_MS;
}

const sameStat = (a: FileStat, b: FileStat) => a.size === b.size && a.mtime === b.mtime && a.ctime === b.ctime && a.ino === b.ino;

function statOf(file: string): FileStat {
  const s = fs.statSync(file);
  return { size: s.size, mtime: Math.floor(s.mtimeMs), ctime: Math.floor(s.ctimeMs), ino: s.ino };
}

/** The text to write for a pending file: re-read when it changed after the scan (the index never goes back in time) or the scan's read was racy (indexed_at is a read's time). */
function currentText(p: Pending): { text: string; stat: FileStat } | null {
  try {
    const stat = statOf(p.abs);
    if (sameStat(stat, p.stat) && p.readAt - changedAt(stat) >= RACY_MS) return p;
    const text = decodeText(readFileNoFollow({ file: p.abs, what: p.docPath }).bytes);
    return text === null ? null : { text, stat };
  } catch {
    return null;
  }
}

/** A plain file is there (a link, even to a file, is not a memory: the scan skipped it). */
function isRegularFile(file: string): boolean {
  try {
    return fs.lstatSync(file).isFile();
  } catch {
    return false;
  }
}

const YIELD_EVERY = 64;

/** `keepUnlisted`: document paths whose rows stay although no file was listed for them (a restore keeps source documents it cannot re-read). */
type ReindexOptions = { handle: StoreHandle; onProgress?: (p: ReindexProgress) => void; keepUnlisted?: (docPath: string) => boolean };
const isMemoryDoc = (docPath: string) => docPath.startsWith("memory/");

/** The unindexable files the last reindex found, kept for Health and the memories page (verify finds them afresh). */
const UNINDEXABLE_KEY = "unindexable_files";
const UNINDEXABLE_CAP = 100;

export function lastUnindexableFiles({ handle }: { handle: StoreHandle }): UnindexableFile[] {
  const raw = (preparedOnce({ sqlite: handle.sqlite, sql: "select value from meta where key = 'unindexable_files'" }).get() as { value: string } | undefined)?.value;
  if (!raw) return [];
  try {
    return JSON.parse(raw) as UnindexableFile[];
  } catch {
    return [];
  }
}

/** The reindex as steps: read and hash every file (yielding now and then for an async driver), then apply every change in ONE transaction, so a crash leaves the previous index whole. */
function* reindexSteps({ handle, onProgress, keepUnlisted }: ReindexOptions): Generator<void, ReindexResult> {
  const started = performance.now();
  const { sqlite, db, store } = handle;
  const listing = listIndexableFiles({ store: handle.store });
  const known = new Map(
    (
      sqlite
        .prepare("select path, doc_id as docId, sha256, bytes, mtime, ctime, inode, indexed_at as indexedAt from documents where origin = 'file'")
        .all() as KnownDocument[]
    ).map((r) => [r.path, r]),
  );
  // Documents with chunks from older chunking rules (normally none: one range read of the version index, not a probe per document).
  const staleDocIds = new Set(
    (sqlite.prepare("select distinct doc_id as docId from chunks where chunking_version != ?").all(CHUNKING_VERSION) as { docId: number }[]).map((r) => r.docId),
  );
  const memoryRows = new Set(db.select({ path: memories.path }).from(memories).all().map((r) => r.path));
  const skippedBy = { binary: 0, oversized: listing.skipped.oversized, bad_name: listing.skipped.badName, symlink: listing.skipped.symlink };
  const unindexable: UnindexableFile[] = [...listing.unindexable];
  const pending: Pending[] = [];
  /** Same content under a new stat (touched, checked out again, replaced by a copy): the row's stat is refreshed so the next scan trusts it. */
  const touched: { docId: number; stat: FileStat; readAt: number }[] = [];
  const seen = new Set<string>();
  let unchanged = 0;
  const total = listing.files.length;
  const zero = (): ReindexKindCounts => ({ scanned: 0, added: 0, changed: 0, unchanged: 0, removed: 0 });
  const byKind = { documents: zero(), memories: zero() };
  const kindOf = (memoryPath: string | null) => (memoryPath !== null ? byKind.memories : byKind.documents);
  for (const f of listing.files) kindOf(f.memoryPath).scanned++;
  for (let i = 0; i < total; i++) {
    const f = listing.files[i];
    if (i % YIELD_EVERY === 0) {
      onProgress?.({ phase: "scanning", done: i, total });
      yield;
    }
    const prev = known.get(f.docPath);
    const memoryRowMissing = f.memoryPath !== null && !memoryRows.has(f.memoryPath);
    if (prev && !staleDocIds.has(prev.docId) && !memoryRowMissing && statVouches(prev, f)) {
      // Unchanged by size, mtime, ctime and inode since a non-racy read: not read again.
      seen.add(f.docPath);
      unchanged++;
      kindOf(f.memoryPath).unchanged++;
      continue;
    }
    const readAt = Date.now();
    let bytes: Buffer;
    try {
      // A file swapped for a link since the listing is not followed (it fails like a vanished file).
      bytes = readFileNoFollow({ file: f.abs, what: f.docPath }).bytes;
    } catch {
      continue; // Deleted while we scanned: treated as absent.
    }
    const text = decodeText(bytes);
    if (text === null) {
      skippedBy.binary++;
      if (isMemoryDoc(f.docPath)) unindexable.push({ path: f.docPath, reason: "not text: binary, or an encoding other than UTF-8 or Latin-1" });
      continue;
    }
    const problem = isMemoryDoc(f.docPath) ? memoryTextProblem(text) : null;
    if (problem) {
      // Listed, never indexed as body with its fields lost; what was indexed before (the last good version) stays.
      unindexable.push({ path: f.docPath, reason: problem });
      if (prev) seen.add(f.docPath);
      continue;
    }
    seen.add(f.docPath);
    if (prev && prev.sha256 === sha256Hex(text) && !staleDocIds.has(prev.docId) && !memoryRowMissing) {
      unchanged++;
      kindOf(f.memoryPath).unchanged++;
      // The stat did not vouch (new, changed or first recorded now, or last read too soon): record it with this read's time.
      if (readAt - changedAt(f) >= RACY_MS) touched.push({ docId: prev.docId, stat: f, readAt });
    }
    else pending.push({ docPath: f.docPath, abs: f.abs, memoryPath: f.memoryPath, text, stat: f, readAt, isNew: !prev });
  }
  onProgress?.({ phase: "scanning", done: total, total });
  yield;

  const gone = [...known.keys()].filter((p) => !seen.has(p) && !keepUnlisted?.(p));
  for (const p of gone) (isMemoryDoc(p) ? byKind.memories : byKind.documents).removed++;
  const descriptions = new Map<string, string>();
  for (const [category, file] of listing.categoryFiles) {
    const text = readFileNoFollow({ file, what: "a category description" }).bytes.toString("utf8").trim();
    if (text) descriptions.set(category, text.slice(0, 2000));
  }
  const currentDescriptions = new Map(
    db
      .select({ path: categories.path, description: categories.description })
      .from(categories)
      .where(isNotNull(categories.description))
      .all()
      .map((r) => [r.path, r.description]),
  );
  const descriptionsChanged =
    descriptions.size !== currentDescriptions.size || [...descriptions].some(([k, v]) => currentDescriptions.get(k) !== v);
  const builtBefore = isIndexBuilt({ handle });
  // Categories are derived from memories; a lost row is rebuilt here.
  const uncategorized = db
    .selectDistinct({ category: memories.category })
    .from(memories)
    .where(sql`not exists (select 1 from categories c where c.path = ${memories.category})`)
    .all()
    .map((r) => r.category);
  unindexable.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const unindexableJson = JSON.stringify(unindexable.slice(0, UNINDEXABLE_CAP));
  const unindexableChanged = unindexableJson !== JSON.stringify(lastUnindexableFiles({ handle }));
  const changedPaths: string[] = [];
  const counts: ReindexCounts = { scanned: total, added: 0, changed: 0, unchanged, removed: gone.length, skipped: skippedBy.binary + skippedBy.oversized + skippedBy.bad_name + skippedBy.symlink };

  // An unchanged tree writes nothing at all.
  if (pending.length > 0 || gone.length > 0 || touched.length > 0 || descriptionsChanged || uncategorized.length > 0 || unindexableChanged || !builtBefore) {
    const writeTotal = pending.length + gone.length;
    // The files are the truth: mirroring them is never refused by the byte quota, and the store's running total is recounted.
    mirroringDisk({ sqlite, fn: () => sqlite
      .transaction(() => {
        let done = 0;
        const recordIdentity = sqlite.prepare("update documents set ctime = ?, inode = ? where path = ?");
        for (const p of pending) {
          const now = currentText(p);
          if (!now) {
            // Gone or unreadable since the scan: leave its rows as they are; the next reindex settles it.
            counts.skipped++;
            onProgress?.({ phase: "writing", done: ++done, total: writeTotal });
            continue;
          }
          const r = p.memoryPath
            ? write(handle, indexMemoryOp({ memoryPath: p.memoryPath, text: now.text, mtime: now.stat.mtime }))
            : ingestDocument({ handle, path: p.docPath, origin: "file", text: now.text, mtime: now.stat.mtime });
          recordIdentity.run(now.stat.ctime, now.stat.ino, p.docPath);
          const added = r.status === "added" || p.isNew;
          counts[added ? "added" : "changed"]++;
          if (changedPaths.length < 20) changedPaths.push(p.docPath);
          kindOf(p.memoryPath)[added ? "added" : "changed"]++;
          onProgress?.({ phase: "writing", done: ++done, total: writeTotal });
        }
        for (const docPath of gone) {
          if (isMemoryDoc(docPath)) {
            // A memory written since the scan (its index row commits just before its file is renamed into place) stays.
            if (isRegularFile(path.join(storeDir(store), ...docPath.split("/")))) {
              counts.removed--;
              byKind.memories.removed--;
            }
            else {
              write(handle, removeMemoryOp(docPath.slice("memory/".length, -".md".length)));
              if (changedPaths.length < 20) changedPaths.push(docPath);
            }
          } else {
            deleteDocumentByPath({ handle, path: docPath });
            if (changedPaths.length < 20) changedPaths.push(docPath);
          }
          onProgress?.({ phase: "writing", done: ++done, total: writeTotal });
        }
        // indexed_at: when this content was last read from the file and found the same.
        const restat = sqlite.prepare("update documents set mtime = ?, ctime = ?, inode = ?, indexed_at = ? where doc_id = ?");
        for (const t of touched) restat.run(t.stat.mtime, t.stat.ctime, t.stat.ino, t.readAt, t.docId);
        for (const category of uncategorized) write(handle, ensureCategoryOp({ category }));
        if (descriptionsChanged) applyCategoryDescriptions({ handle, descriptions });
        write(handle, pruneAllCategoriesOp());
        if (unindexableChanged) sqlite.prepare("insert into meta(key, value) values (?, ?) on conflict(key) do update set value = excluded.value").run(UNINDEXABLE_KEY, unindexableJson);
        recountStoreUsage(sqlite);
        markIndexBuilt({ handle });
      })
      .immediate() });
  }
  return { store, counts, by_kind: byKind, skipped_by: skippedBy, links_outside_root: listing.linksOutsideRoot, unindexable: unindexable.slice(0, UNINDEXABLE_CAP), changed_paths: changedPaths, duration_ms: Math.round(performance.now() - started) };
}

function applyCategoryDescriptions({ handle, descriptions }: { handle: StoreHandle; descriptions: Map<string, string> }): void {
  const { db } = handle;
  db.update(categories).set({ description: null }).where(isNotNull(categories.description)).run();
  for (const [category, description] of descriptions) {
    write(handle, ensureCategoryOp({ category }));
    db.update(categories).set({ description }).where(eq(categories.path, category)).run();
  }
}

/** Record that the index matches the files as of now, with its chunking: at the end of a reindex, and when a store is created (nothing to build from). */
export function markIndexBuilt({ handle }: { handle: StoreHandle }): void {
  for (const [key, value] of [["index_built_at", String(Date.now())], ["chunking_version", String(CHUNKING_VERSION)]]) {
    handle.db.insert(meta).values({ key, value }).onConflictDoUpdate({ target: meta.key, set: { value } }).run();
  }
  forgetRebuildMarkers();
}

/** Whether the index was ever built from the files (not: e.g. a deleted index.db). Asked on every store open. */
function isIndexBuilt({ handle }: { handle: StoreHandle }): boolean {
  return rebuildMarkers(handle.sqlite).indexBuilt;
}

const g = globalThis as unknown as { __dualmindReindexing?: Set<string> };
function running(): Set<string> {
  g.__dualmindReindexing ??= new Set();
  return g.__dualmindReindexing;
}

function claim(store: string): void {
  if (running().has(store)) throw new AppError("conflict", `a reindex of store ${store} is already running`);
  running().add(store);
}

/** Reindex synchronously (first-access rebuild, restore, tests, benches); not audited: an admin's reindex goes through jobs.ts. */
export function reindexStore({ handle, onProgress, keepUnlisted }: ReindexOptions): ReindexResult {
  claim(handle.store);
  try {
    return runSteps(reindexSteps({ handle, onProgress, keepUnlisted }));
  } finally {
    running().delete(handle.store);
  }
}

/** Run a generator of synchronous steps (reindex, verify) to its result at once. */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** The same, letting other work (requests, timers) run between steps. */
export async function runStepsYielding<T>(steps: Generator<void, T>): Promise<T> {
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) return step.value;
    await letOthersRun();
  }
}

const passes = ((globalThis as unknown as { __dualmindBackgroundPasses?: Map<string, Promise<unknown>> }).__dualmindBackgroundPasses ??= new Map());

/**
 * Reindex without starving the event loop while files are read (the write phase is one transaction).
 * A `background` pass (the memory folder watch, watch.ts) is refused while another reindex runs; any
 * other reindex waits for a background pass to end rather than being refused because of it.
 */
export async function reindexStoreAsync({ handle, onProgress, background = false }: { handle: StoreHandle; onProgress?: (p: ReindexProgress) => void; background?: boolean }): Promise<ReindexResult> {
  if (!background) for (let pass = passes.get(handle.store); pass; pass = passes.get(handle.store)) await pass.catch(() => undefined);
  claim(handle.store);
  const work = (async () => {
    try {
      return await runStepsYielding(reindexSteps({ handle, onProgress }));
    } finally {
      running().delete(handle.store);
    }
  })();
  if (background) {
    passes.set(handle.store, work);
    void work.then(
      () => passes.delete(handle.store),
      () => passes.delete(handle.store),
    );
  }
  return work;
}

/** A store whose index.db was never built is rebuilt from its files on first access; a half-built full-text index is carried on in the background (fts-rebuild.ts). */
export function ensureIndexBuilt({ handle }: { handle: StoreHandle }): void {
  resumeFtsRebuild({ handle });
  if (!isIndexBuilt({ handle }) && !running().has(handle.store)) {
    const r = reindexStore({ handle });
    // A brand-new empty store is not news; an index rebuilt from existing files is.
    if (r.counts.scanned > 0) log("warn", "store index was missing or never built; rebuilt it from files", { store: handle.store, ...r.counts });
  }
}
