import { getStoreDb } from "../db/connection";
import { AppError } from "../errors";
import { storeExists } from "../db/store-names";
import { CHUNKING_VERSION } from "./chunking";
import { readFileNoFollow } from "./contained-fs";
import { listIndexableFiles } from "./files";
import { decodeText } from "./ingest";
import { sha256Hex } from "../common";

const LIST_CAP = 100;

export type VerifyReport = {
  store: string;
  /** consistent and inSync. */
  ok: boolean;
  /** The database agrees with itself: SQLite integrity, FTS mirrors chunks, memories have their documents. */
  consistent: boolean;
  /** The database mirrors the files: no mismatches, no missing files, nothing unindexed, nothing stale. */
  inSync: boolean;
  chunkingVersion: number;
  counts: { files: number; fileDocuments: number; apiDocuments: number; chunks: number; memories: number; skipped: number };
  integrity: string;
  ftsMissing: number;
  ftsExtra: number;
  memoriesWithoutDocument: string[];
  hashMismatches: string[];
  missingFiles: string[];
  notIndexed: string[];
  staleChunks: number;
  durationMs: number;
};

/** Compare files with the index without writing anything. Lists are capped at 100 paths each. */
export function verifyStore({ store }: { store: string }): VerifyReport {
  if (!storeExists(store)) throw new AppError("not_found", `store ${store} does not exist`);
  const started = performance.now();
  const { sqlite } = getStoreDb(store);
  const integrity = (sqlite.pragma("quick_check", { simple: true }) as string) ?? "unknown";
  const one = (sql: string) => (sqlite.prepare(sql).get() as { n: number }).n;
  // The FTS index stores one docsize row per indexed chunk rowid: compare both ways.
  const ftsMissing = one("select count(*) as n from chunks c where not exists (select 1 from chunks_fts_docsize d where d.id = c.id)");
  const ftsExtra = one("select count(*) as n from chunks_fts_docsize d where not exists (select 1 from chunks c where c.id = d.id)");
  const memoriesWithoutDocument = (
    sqlite.prepare("select path from memories m where not exists (select 1 from documents d where d.path = 'memory/' || m.path || '.md') order by path limit ?").all(LIST_CAP) as { path: string }[]
  ).map((r) => r.path);

  const docs = new Map((sqlite.prepare("select path, sha256 from documents where origin = 'file'").all() as { path: string; sha256: string }[]).map((r) => [r.path, r.sha256]));
  const listing = listIndexableFiles({ store });
  const hashMismatches: string[] = [];
  const notIndexed: string[] = [];
  const present = new Set<string>();
  let binary = 0;
  for (const f of listing.files) {
    let bytes: Buffer;
    try {
      bytes = readFileNoFollow(f.abs, f.docPath).bytes;
    } catch {
      continue;
    }
    if (decodeText(bytes) === null) {
      binary++;
      continue;
    }
    present.add(f.docPath);
    const sha = docs.get(f.docPath);
    if (sha === undefined) notIndexed.push(f.docPath);
    else if (sha !== sha256Hex(bytes)) hashMismatches.push(f.docPath);
  }
  const missingFiles = [...docs.keys()].filter((p) => !present.has(p)).sort();
  const staleChunks = (sqlite.prepare("select count(*) as n from chunks where chunking_version != ?").get(CHUNKING_VERSION) as { n: number }).n;
  const consistent = integrity === "ok" && ftsMissing === 0 && ftsExtra === 0 && memoriesWithoutDocument.length === 0;
  const inSync = hashMismatches.length === 0 && missingFiles.length === 0 && notIndexed.length === 0 && staleChunks === 0;
  return {
    store,
    ok: consistent && inSync,
    consistent,
    inSync,
    chunkingVersion: CHUNKING_VERSION,
    counts: {
      files: present.size,
      fileDocuments: docs.size,
      apiDocuments: one("select count(*) as n from documents where origin = 'api'"),
      chunks: one("select count(*) as n from chunks"),
      memories: one("select count(*) as n from memories"),
      skipped: binary + listing.skipped.oversized + listing.skipped.badName + listing.skipped.symlink,
    },
    integrity,
    ftsMissing,
    ftsExtra,
    memoriesWithoutDocument,
    hashMismatches: hashMismatches.slice(0, LIST_CAP),
    missingFiles: missingFiles.slice(0, LIST_CAP),
    notIndexed: notIndexed.slice(0, LIST_CAP),
    staleChunks,
    durationMs: Math.round(performance.now() - started),
  };
}
