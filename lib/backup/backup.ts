/**
 * Online backups and store bundles. Database files are copied with SQLite's
 * backup API (through better-sqlite3), so a copy taken while the server writes
 * is a consistent snapshot; memory files are copied beside it. Memories are
 * file-first and their index rows are derived, so a restore reindexes from the
 * copied files: whatever a write in flight left half-done is settled by the
 * files, and the restored store verifies clean.
 */
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import { getConfig } from "../config";
import { getGovernance, getStoreDb, storeDir, STORE_NAME_RE, type GovernanceHandle, type StoreHandle } from "../db/connection";
import { getActiveFingerprintId, getEmbedder, getFingerprintInfo } from "../embed/model";
import type { Fingerprint } from "../embed/providers";
import { startReembed } from "../embed/reembed";
import { appendAudit } from "../governance/audit";
import { AppError } from "../errors";
import { findSymlinks } from "../index/contained-fs";
import { copyCheckedFile, copyCheckedTree, readCheckedFile } from "./checked-copy";
import { reindexStore } from "../index/reindex";
import { listStoreNames, storeExists } from "../db/store-names";
import { chmodPrivate, mkdirPrivate, PRIVATE_FILE_MODE } from "../private-fs";
import { openStore } from "../stores/stores";
import { versions } from "../version";

export const BACKUP_FORMAT = "dualmind.backup.v1" as const;
export const BUNDLE_FORMAT = "dualmind.store-bundle.v1" as const;

/**
 * One backup step copies every page: a multi-step copy restarts whenever
 * another connection writes the source, so under steady writes it may never
 * finish. One step holds a read snapshot for its duration instead.
 */
const ALL_PAGES = 0x7fffffff;

/** Copy a live database to `dest` (replaced) and check the copy's integrity. */
export async function snapshotDatabase({ handle, dest }: { handle: StoreHandle | GovernanceHandle; dest: string }): Promise<{ bytes: number; integrity: string }> {
  mkdirPrivate(path.dirname(dest));
  fs.rmSync(dest, { force: true });
  await handle.sqlite.backup(dest, { progress: () => ALL_PAGES });
  // SQLite creates the copy 0644; its folder is already 0700, and the copy is made 0600 before anyone is told of it.
  chmodPrivate(dest);
  const copy = new Database(dest);
  try {
    // The copy is a standalone file: no WAL beside it.
    copy.pragma("journal_mode = DELETE");
    const integrity = copy.pragma("integrity_check", { simple: true }) as string;
    if (integrity !== "ok") throw new AppError("internal", `backup of ${path.basename(dest)} failed its integrity check: ${integrity}`);
    return { bytes: fs.statSync(dest).size, integrity };
  } finally {
    copy.close();
  }
}

/**
 * Copy a store's memory/ folder; returns the number of files. Hidden entries
 * (in-flight temp files of a memory write) are not memories and are skipped,
 * as reindex skips them; so are symbolic links, which are never followed (an
 * import refuses a tree that holds any before it gets here); a file deleted
 * while the copy runs is simply not in the copy. Copies are 0600 in 0700 folders.
 */
function copyMemoryFiles({ from, to }: { from: string; to: string }): number {
  mkdirPrivate(to);
  if (!fs.existsSync(from)) return 0;
  let files = 0;
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue;
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (entry.isDirectory()) files += copyMemoryFiles({ from: src, to: dst });
    else if (entry.isFile()) {
      try {
        fs.copyFileSync(src, dst);
        chmodPrivate(dst);
        files++;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      }
    }
  }
  return files;
}

async function activeFingerprint({ handle }: { handle: StoreHandle }): Promise<Fingerprint | null> {
  let configured: Fingerprint;
  try {
    configured = await getEmbedder().fingerprint;
  } catch {
    return null;
  }
  return getFingerprintInfo({ handle, fingerprintId: getActiveFingerprintId({ handle, configured }) });
}

/** What a database holds, by kind, as a restore summary counts it (null: the table is not in that schema). */
export type StoreCounts = { documents: number | null; chunks: number | null; vectors: number | null; memories: number | null; traces: number | null; learnings: number | null; thoughts: number | null; graph: number | null };
export type LedgerCounts = Record<(typeof LEDGER_TABLES)[number], number | null>;

const STORE_KIND_SQL: Record<keyof StoreCounts, string> = {
  // Memory files are documents too; they are counted as memories.
  documents: "select count(*) from documents where path not like 'memory/%'",
  chunks: "select count(*) from chunks",
  vectors: "select count(*) from embeddings",
  memories: "select count(*) from memories",
  traces: "select count(*) from reasoning_traces",
  learnings: "select count(*) from learnings",
  thoughts: "select count(*) from thoughts",
  graph: "select (select count(*) from kg_node) + (select count(*) from kg_relation) + (select count(*) from kg_frame)",
};
const LEDGER_TABLES = ["tasks", "skill_runs", "validations", "provenance", "overrides", "audit_log", "dialectic_sessions", "dialectic_messages", "users", "api_tokens"] as const;

function countOrNull(db: Database.Database, sql: string): number | null {
  try {
    return db.prepare(sql).pluck().get() as number;
  } catch {
    return null;
  }
}

export function countStoreKinds(db: Database.Database): StoreCounts {
  return Object.fromEntries(Object.entries(STORE_KIND_SQL).map(([k, q]) => [k, countOrNull(db, q)])) as StoreCounts;
}

export function countLedgerKinds(db: Database.Database): LedgerCounts {
  return Object.fromEntries(LEDGER_TABLES.map((t) => [t, countOrNull(db, `select count(*) from ${t}`)])) as LedgerCounts;
}

/** Source documents (`source/<root>/...`, read from DUALMIND_SOURCE_ROOTS) a store's index holds, by root name. */
function sourceDocumentsByRoot(db: Database.Database): Map<string, number> {
  const rows = db.prepare("select substr(path, 8, instr(substr(path, 8), '/') - 1) as root, count(*) as n from documents where origin = 'file' and path like 'source/%/%' group by root").all() as { root: string; n: number }[];
  return new Map(rows.map((r) => [r.root, r.n]));
}

function schemaVersionOf(db: Database.Database): string | null {
  try {
    return (db.prepare("select value from meta where key = 'schema_version'").pluck().get() as string | undefined) ?? null;
  } catch {
    return null;
  }
}

function withReadOnlyCopy<T>(file: string, read: (db: Database.Database) => T): T {
  const db = new Database(file, { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const countsSchema = z.record(z.string(), z.number().nullable());
const sourceRootSchema = z.object({ name: z.string(), dir: z.string().nullable(), documents: z.number() }).strict();
const storeEntrySchema = z
  .object({
    name: z.string().regex(STORE_NAME_RE),
    bytes: z.number(),
    memoryFiles: z.number(),
    fingerprint: z.unknown().nullable(),
    // Absent in backups made before the manifest recorded them: restore then reads them from the copy itself.
    schemaVersion: z.string().nullable().optional(),
    sourceRoots: z.array(sourceRootSchema).optional(),
    counts: countsSchema.optional(),
  })
  .strict();

const backupManifestSchema = z
  .object({
    format: z.literal(BACKUP_FORMAT),
    createdAt: z.number(),
    app: z.string(),
    governance: z.object({ bytes: z.number(), schemaVersion: z.string().nullable().optional(), counts: countsSchema.optional() }).strict(),
    stores: z.array(storeEntrySchema),
  })
  .strict();
export type BackupManifest = z.infer<typeof backupManifestSchema>;

export type BackupProgress = { done: number; total: number; item: string };

/**
 * Online backup of the whole DATA_DIR into `outDir` (empty or absent). The
 * ledger is copied last: its rows commit before the store change they
 * describe, so a ledger copied after the stores holds the rows of every
 * change the store copies hold.
 */
export async function backupDataDir({ outDir, actor, onProgress }: { outDir: string; actor: string; onProgress?: (p: BackupProgress) => void }): Promise<BackupManifest> {
  assertEmptyDir(outDir);
  const stores = listStoreNames();
  const total = stores.length + 1;
  const roots = getConfig().sourceRoots;
  const entries: BackupManifest["stores"] = [];
  for (const [i, store] of stores.entries()) {
    onProgress?.({ done: i, total, item: store });
    const dir = path.join(outDir, "stores", store);
    const handle = openStore({ store });
    const dest = path.join(dir, "index.db");
    const db = await snapshotDatabase({ handle, dest });
    const memoryFiles = copyMemoryFiles({ from: path.join(storeDir(store), "memory"), to: path.join(dir, "memory") });
    const { counts, bySource, schemaVersion } = withReadOnlyCopy(dest, (copy) => ({ counts: countStoreKinds(copy), bySource: sourceDocumentsByRoot(copy), schemaVersion: schemaVersionOf(copy) }));
    const sourceRoots = [...bySource].map(([name, documents]) => ({ name, dir: roots.find((r) => r.store === store && r.name === name)?.dir ?? null, documents }));
    entries.push({ name: store, bytes: db.bytes, memoryFiles, fingerprint: await activeFingerprint({ handle }), schemaVersion, sourceRoots, counts });
  }
  onProgress?.({ done: stores.length, total, item: "governance.db" });
  const govDest = path.join(outDir, "governance.db");
  const gov = await snapshotDatabase({ handle: getGovernance(), dest: govDest });
  const govInfo = withReadOnlyCopy(govDest, (copy) => ({ counts: countLedgerKinds(copy), schemaVersion: schemaVersionOf(copy) }));
  onProgress?.({ done: total, total, item: "done" });
  const manifest: BackupManifest = { format: BACKUP_FORMAT, createdAt: Date.now(), app: versions().app, governance: { bytes: gov.bytes, ...govInfo }, stores: entries };
  fs.writeFileSync(path.join(outDir, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n", { mode: PRIVATE_FILE_MODE });
  appendAudit({ actor, action: "backup.create", target: `backup:${path.resolve(outDir)}`, details: { stores: stores.length } });
  return manifest;
}

function assertEmptyDir(dir: string): void {
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) throw new AppError("conflict", `${dir} is not empty`);
  mkdirPrivate(dir);
}

/**
 * A bundle or backup is copied into DATA_DIR only when it holds no symbolic
 * link at all: a linked memory/ (or index.db, or any entry below) would copy
 * whatever it points at (~/.ssh, another store) into a store. Checked before
 * anything is created, so a refused import leaves nothing behind. This is the
 * early, readable refusal; the copy itself (checked-copy.ts) checks each file
 * again on the descriptor it reads, so swapping a file afterwards gains nothing.
 */
function assertNoSymlinks(dir: string, entries: string[]): void {
  const links = entries.flatMap((entry) => findSymlinks({ dir: path.join(dir, entry), label: entry }));
  if (links.length > 0) {
    throw new AppError("unprocessable", `${dir} holds symbolic links (${links.join(", ")}); bundles and backups must be plain files and folders`, links.map((l) => ({ path: l, message: "symbolic link" })));
  }
}

/** manifest.json and bundle.json are a few KB; anything larger is not one. */
const MANIFEST_MAX_BYTES = 1024 * 1024;
/** A memory file may be as large as DUALMIND_MAX_FILE_BYTES allows at most. */
const MEMORY_FILE_MAX_BYTES = 64 * 1024 * 1024;

function readJsonManifest(root: string, rel: string): unknown {
  const bytes = readCheckedFile({ root, rel, maxBytes: MANIFEST_MAX_BYTES, limitName: "the manifest size limit" });
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch (e) {
    throw new AppError("invalid_json", `${path.join(root, rel)} is not valid JSON: ${(e as Error).message}`);
  }
}

/** The folder a bundle or backup is read from, as a real path: every file's descriptor is checked to lie under it. */
function realSourceDir(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    throw new AppError("not_found", `${dir} does not exist`);
  }
}

function isReadableDir(dir: string): boolean {
  try {
    if (!fs.statSync(dir).isDirectory()) return false;
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function migrationTags(which: "index" | "governance"): Set<string> {
  const journal = JSON.parse(fs.readFileSync(path.join(process.cwd(), "drizzle", which, "meta", "_journal.json"), "utf8")) as { entries: { tag: string }[] };
  return new Set(journal.entries.map((e) => e.tag));
}

/** Source documents a restore cannot read again: the root is not configured for that store, or its folder cannot be read. */
export type UnreadableSource = { store: string; root: string; documents: number; backedUpFrom: string | null; reason: string };

export type RestoreSummary = {
  stores: string[];
  /** What the restored data dir holds, by kind, per store and for the ledger. */
  restored: { stores: Record<string, StoreCounts>; ledger: LedgerCounts };
  /** What the backup held that the restored data dir does not (or holds only as backed up), and why. */
  notRestored: { store: string | null; kind: string; count: number; reason: string }[];
};

/**
 * Restore a backup into an empty DATA_DIR (restoring over live data would
 * silently drop it), through a checked staging folder; what refuses and what
 * `keepStaleSources` keeps is docs/backup-and-restore.md's "Restore". Each
 * store is then reindexed from its copied files so its index matches them.
 */
export function restoreDataDir({ backupDir, keepStaleSources = false }: { backupDir: string; keepStaleSources?: boolean }): RestoreSummary {
  assertNoSymlinks(backupDir, ["manifest.json"]);
  const root = realSourceDir(backupDir);
  const manifest = backupManifestSchema.parse(readJsonManifest(root, "manifest.json"));
  assertNoSymlinks(backupDir, ["governance.db", "stores"]);
  const config = getConfig();
  const dataDir = config.dataDir;
  if (fs.existsSync(path.join(dataDir, "governance.db")) || listStoreNames().length > 0) {
    throw new AppError("conflict", `DATA_DIR ${dataDir} already holds data; restore into an empty one`);
  }
  mkdirPrivate(dataDir);
  const staging = fs.mkdtempSync(path.join(dataDir, ".restore-"));
  const unreadable: UnreadableSource[] = [];
  try {
    copyCheckedFile({ root, rel: "governance.db", dest: path.join(staging, "governance.db"), maxBytes: manifest.governance.bytes, limitName: "the size the manifest records" });
    const problems: string[] = [];
    const govTags = migrationTags("governance");
    const govVersion = withReadOnlyCopy(path.join(staging, "governance.db"), schemaVersionOf);
    if (govVersion && !govTags.has(govVersion)) problems.push(`governance.db has schema ${govVersion}, newer than this version of dualmind knows`);
    const indexTags = migrationTags("index");
    for (const s of manifest.stores) {
      const dir = path.join(staging, "stores", s.name);
      mkdirPrivate(dir);
      copyCheckedFile({ root, rel: path.join("stores", s.name, "index.db"), dest: path.join(dir, "index.db"), maxBytes: s.bytes, limitName: "the size the manifest records" });
      copyCheckedTree({ root, rel: path.join("stores", s.name, "memory"), dest: path.join(dir, "memory"), maxFileBytes: MEMORY_FILE_MAX_BYTES, limitName: "the memory file size limit" });
      const { bySource, schemaVersion } = withReadOnlyCopy(path.join(dir, "index.db"), (db) => ({ bySource: sourceDocumentsByRoot(db), schemaVersion: schemaVersionOf(db) }));
      if (schemaVersion && !indexTags.has(schemaVersion)) problems.push(`store ${s.name} has schema ${schemaVersion}, newer than this version of dualmind knows`);
      for (const [name, documents] of bySource) {
        const configured = config.sourceRoots.find((r) => r.store === s.name && r.name === name);
        const backedUpFrom = s.sourceRoots?.find((r) => r.name === name)?.dir ?? null;
        if (!configured) unreadable.push({ store: s.name, root: name, documents, backedUpFrom, reason: `no root named ${name} for store ${s.name} in DUALMIND_SOURCE_ROOTS` });
        else if (!isReadableDir(configured.dir)) unreadable.push({ store: s.name, root: name, documents, backedUpFrom, reason: `its folder ${configured.dir} cannot be read` });
      }
    }
    if (problems.length > 0) throw new AppError("conflict", `cannot restore ${backupDir}: ${problems.join("; ")}`, problems.map((message) => ({ message })));
    if (unreadable.length > 0 && !keepStaleSources) {
      const lines = unreadable.map((u) => `store ${u.store}: ${u.documents} source document(s) under source/${u.root}/${u.backedUpFrom ? ` (backed up from ${u.backedUpFrom})` : ""} — ${u.reason}`);
      throw new AppError(
        "conflict",
        `restoring ${backupDir} would lose source documents this configuration cannot read again: ${lines.join("; ")}. Set DUALMIND_SOURCE_ROOTS as it was when the backup was made, or restore with --keep-stale-sources to keep them as backed up (not re-read)`,
        unreadable.map((u) => ({ path: `stores/${u.store}/source/${u.root}`, message: u.reason, documents: u.documents, backedUpFrom: u.backedUpFrom })),
      );
    }
    // Checked: moved into place (same file system, so each move is a rename).
    fs.renameSync(path.join(staging, "governance.db"), path.join(dataDir, "governance.db"));
    mkdirPrivate(path.join(dataDir, "stores"));
    for (const s of manifest.stores) fs.renameSync(path.join(staging, "stores", s.name), storeDir(s.name));
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  const notRestored: RestoreSummary["notRestored"] = [];
  const restoredStores: Record<string, StoreCounts> = {};
  for (const s of manifest.stores) {
    const stale = unreadable.filter((u) => u.store === s.name);
    // Source documents whose file the reindex does not find stay as backed up: a restore never deletes what it could not read.
    const keptUnread = new Map<string, number>();
    reindexStore({
      handle: openStore({ store: s.name, buildIndex: false }),
      keepUnlisted: (p) => {
        if (!p.startsWith("source/")) return false;
        const root = p.split("/")[1];
        keptUnread.set(root, (keptUnread.get(root) ?? 0) + 1);
        return true;
      },
    });
    for (const [root, count] of keptUnread) {
      const u = stale.find((x) => x.root === root);
      const dir = config.sourceRoots.find((r) => r.store === s.name && r.name === root)?.dir;
      notRestored.push({ store: s.name, kind: "source documents re-read", count, reason: `kept as backed up, not re-read: ${u ? u.reason : `their files are not in ${dir}`}` });
    }
    restoredStores[s.name] = countStoreKinds(getStoreDb({ store: s.name }).sqlite);
    for (const [kind, before] of Object.entries(s.counts ?? {})) {
      const after = restoredStores[s.name][kind as keyof StoreCounts];
      if (before !== null && after !== null && after < before) {
        notRestored.push({ store: s.name, kind, count: before - after, reason: kind === "vectors" || kind === "chunks" ? "rebuilt from the restored files (re-embedded by the worker)" : "not in the restored files" });
      }
    }
  }
  const ledger = countLedgerKinds(getGovernance().sqlite);
  return { stores: manifest.stores.map((s) => s.name), restored: { stores: restoredStores, ledger }, notRestored };
}

const bundleManifestSchema = z
  .object({ format: z.literal(BUNDLE_FORMAT), store: z.string().regex(STORE_NAME_RE), exportedAt: z.number(), app: z.string(), memoryFiles: z.number(), bytes: z.number(), fingerprint: z.unknown().nullable() })
  .strict();
export type BundleManifest = z.infer<typeof bundleManifestSchema>;

/** Export one store as a bundle directory: index.db snapshot, memory/ files, bundle.json with the embedding fingerprint. */
export async function exportStoreBundle({ handle, outDir }: { handle: StoreHandle; outDir: string }): Promise<BundleManifest> {
  assertEmptyDir(outDir);
  const db = await snapshotDatabase({ handle, dest: path.join(outDir, "index.db") });
  const memoryFiles = copyMemoryFiles({ from: path.join(storeDir(handle.store), "memory"), to: path.join(outDir, "memory") });
  const manifest: BundleManifest = {
    format: BUNDLE_FORMAT,
    store: handle.store,
    exportedAt: Date.now(),
    app: versions().app,
    memoryFiles,
    bytes: db.bytes,
    fingerprint: await activeFingerprint({ handle }),
  };
  fs.writeFileSync(path.join(outDir, "bundle.json"), JSON.stringify(manifest, null, 2) + "\n", { mode: PRIVATE_FILE_MODE });
  return manifest;
}

export type BundleImport = { store: string; memoryFiles: number; reembed: { toEmbed: number } | null; fingerprintMatches: boolean | null };

/**
 * Import a bundle as a new store (`as` renames it). Without `reembed` the
 * bundle's vectors serve searches as they are (a different configured model
 * shows as drift); with it every embeddable row is queued again for the
 * configured model. Audited.
 */
export async function importStoreBundle({ bundleDir, as, reembed, actor }: { bundleDir: string; as?: string; reembed: boolean; actor: string }): Promise<BundleImport> {
  assertNoSymlinks(bundleDir, ["bundle.json", "index.db", "memory"]);
  const root = realSourceDir(bundleDir);
  const manifest = bundleManifestSchema.parse(readJsonManifest(root, "bundle.json"));
  const store = as ?? manifest.store;
  if (!STORE_NAME_RE.test(store)) throw new AppError("invalid_request", `invalid store name ${store}`);
  if (storeExists(store)) throw new AppError("conflict", `store ${store} already exists`);
  // Copied into a staging folder from checked descriptors; a refused file leaves no store behind.
  mkdirPrivate(path.join(getConfig().dataDir, "stores"));
  const staging = fs.mkdtempSync(path.join(getConfig().dataDir, ".import-"));
  let memoryFiles: number;
  try {
    copyCheckedFile({ root, rel: "index.db", dest: path.join(staging, "index.db"), maxBytes: manifest.bytes, limitName: "the size bundle.json records" });
    memoryFiles = copyCheckedTree({ root, rel: "memory", dest: path.join(staging, "memory"), maxFileBytes: MEMORY_FILE_MAX_BYTES, limitName: "the memory file size limit" });
    fs.renameSync(staging, storeDir(store));
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  // The copied index is brought in line with the copied files by this reindex, not by openStore's build-if-missing.
  const handle = openStore({ store, buildIndex: false });
  reindexStore({ handle });
  let configured: Fingerprint | null = null;
  try {
    configured = await getEmbedder().fingerprint;
  } catch {
    configured = null;
  }
  const bundleFp = manifest.fingerprint as { id?: string } | null;
  const fingerprintMatches = configured && bundleFp?.id ? configured.id === bundleFp.id : null;
  let queued: BundleImport["reembed"] = null;
  if (reembed) {
    if (!configured) throw new AppError("unavailable", "the embedding provider is unavailable; import without --reembed or fix the provider");
    const r = startReembed({ handle, configured, onlyStale: false, actor });
    queued = { toEmbed: r.started ? r.job.total : 0 };
  }
  appendAudit({ actor, action: "store.import", target: `store:${store}`, details: { from: manifest.store, memoryFiles, reembed, fingerprintMatches } });
  return { store, memoryFiles, reembed: queued, fingerprintMatches };
}
