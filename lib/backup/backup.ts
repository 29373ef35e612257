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
import { getGovernance, storeDir, STORE_NAME_RE, type GovernanceHandle, type StoreHandle } from "../db/connection";
import { getActiveFingerprintId, getEmbedder, getFingerprintInfo } from "../embed/model";
import type { Fingerprint } from "../embed/providers";
import { startReembed } from "../embed/reembed";
import { appendAudit } from "../governance/audit";
import { AppError } from "../errors";
import { findSymlinks } from "../index/contained-fs";
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

const storeEntrySchema = z.object({ name: z.string().regex(STORE_NAME_RE), bytes: z.number(), memoryFiles: z.number(), fingerprint: z.unknown().nullable() }).strict();

const backupManifestSchema = z
  .object({ format: z.literal(BACKUP_FORMAT), createdAt: z.number(), app: z.string(), governance: z.object({ bytes: z.number() }).strict(), stores: z.array(storeEntrySchema) })
  .strict();
export type BackupManifest = z.infer<typeof backupManifestSchema>;

export type BackupProgress = { done: number; total: number; item: string };

/**
 * Online backup of the whole DATA_DIR into `outDir` (must be empty or absent):
 * governance.db, every store's index.db and memory/ folder, and manifest.json.
 */
export async function backupDataDir({ outDir, actor, onProgress }: { outDir: string; actor: string; onProgress?: (p: BackupProgress) => void }): Promise<BackupManifest> {
  assertEmptyDir(outDir);
  const stores = listStoreNames();
  const total = stores.length + 1;
  onProgress?.({ done: 0, total, item: "governance.db" });
  const gov = await snapshotDatabase({ handle: getGovernance(), dest: path.join(outDir, "governance.db") });
  const entries: BackupManifest["stores"] = [];
  for (const [i, store] of stores.entries()) {
    onProgress?.({ done: i + 1, total, item: store });
    const dir = path.join(outDir, "stores", store);
    const handle = openStore({ store });
    const db = await snapshotDatabase({ handle, dest: path.join(dir, "index.db") });
    const memoryFiles = copyMemoryFiles({ from: path.join(storeDir(store), "memory"), to: path.join(dir, "memory") });
    entries.push({ name: store, bytes: db.bytes, memoryFiles, fingerprint: await activeFingerprint({ handle }) });
  }
  onProgress?.({ done: total, total, item: "done" });
  const manifest: BackupManifest = { format: BACKUP_FORMAT, createdAt: Date.now(), app: versions().app, governance: { bytes: gov.bytes }, stores: entries };
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
 * anything is created, so a refused import leaves nothing behind.
 */
function assertNoSymlinks(dir: string, entries: string[]): void {
  const links = entries.flatMap((entry) => findSymlinks(path.join(dir, entry), entry));
  if (links.length > 0) {
    throw new AppError("unprocessable", `${dir} holds symbolic links (${links.join(", ")}); bundles and backups must be plain files and folders`, links.map((l) => ({ path: l, message: "symbolic link" })));
  }
}

function readJsonFile(file: string): unknown {
  if (!fs.existsSync(file)) throw new AppError("not_found", `${file} does not exist`);
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    throw new AppError("invalid_json", `${file} is not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * Restore a backup into the configured DATA_DIR, which must hold no data yet
 * (restoring over live data would silently drop it). Each store is reindexed
 * from its copied files so the restored index matches them.
 */
export function restoreDataDir({ backupDir }: { backupDir: string }): { stores: string[] } {
  assertNoSymlinks(backupDir, ["manifest.json"]);
  const manifest = backupManifestSchema.parse(readJsonFile(path.join(backupDir, "manifest.json")));
  assertNoSymlinks(backupDir, ["governance.db", "stores"]);
  const dataDir = getConfig().dataDir;
  if (fs.existsSync(path.join(dataDir, "governance.db")) || listStoreNames().length > 0) {
    throw new AppError("conflict", `DATA_DIR ${dataDir} already holds data; restore into an empty one`);
  }
  mkdirPrivate(dataDir);
  fs.copyFileSync(path.join(backupDir, "governance.db"), path.join(dataDir, "governance.db"));
  chmodPrivate(path.join(dataDir, "governance.db"));
  for (const s of manifest.stores) {
    const dir = path.join(dataDir, "stores", s.name);
    mkdirPrivate(dir);
    fs.copyFileSync(path.join(backupDir, "stores", s.name, "index.db"), path.join(dir, "index.db"));
    chmodPrivate(path.join(dir, "index.db"));
    copyMemoryFiles({ from: path.join(backupDir, "stores", s.name, "memory"), to: path.join(dir, "memory") });
    reindexStore({ handle: openStore({ store: s.name, buildIndex: false }) });
  }
  return { stores: manifest.stores.map((s) => s.name) };
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
  const manifest = bundleManifestSchema.parse(readJsonFile(path.join(bundleDir, "bundle.json")));
  const store = as ?? manifest.store;
  if (!STORE_NAME_RE.test(store)) throw new AppError("invalid_request", `invalid store name ${store}`);
  if (storeExists(store)) throw new AppError("conflict", `store ${store} already exists`);
  const dir = storeDir(store);
  mkdirPrivate(dir);
  fs.copyFileSync(path.join(bundleDir, "index.db"), path.join(dir, "index.db"));
  chmodPrivate(path.join(dir, "index.db"));
  const memoryFiles = copyMemoryFiles({ from: path.join(bundleDir, "memory"), to: path.join(dir, "memory") });
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
