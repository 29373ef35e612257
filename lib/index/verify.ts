import { count, eq, ne, sql } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { chunks, documents, memories } from "../db/schema/index";
import { CHUNKING_VERSION } from "./chunking";
import { readFileNoFollow } from "./contained-fs";
import { listIndexableFiles } from "./files";
import { decodeText } from "./ingest";
import { sha256Hex } from "../common";

const LIST_CAP = 100;

type CountRow = { n: number };

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
export function verifyStore({ handle }: { handle: StoreHandle }): VerifyReport {
  const started = performance.now();
  const { sqlite, db } = handle;
  const integrity = (sqlite.pragma("quick_check", { simple: true }) as string) ?? "unknown";
  // FTS5 shadow tables are not in the Drizzle schema.
  const one = (query: string) => (sqlite.prepare(query).get() as CountRow).n;
  // The FTS index stores one docsize row per indexed chunk rowid: compare both ways. Rows a pending
  // tokenizer rebuild has still to index (fts-rebuild.ts) are not missing: they are on their way.
  const ftsMissing = one(`select count(*) as n from chunks c where not exists (select 1 from chunks_fts_docsize d where d.id = c.id)
    and not (c.id > coalesce((select cast(value as integer) from meta where key = 'fts_rebuilt_through'), 0)
             and c.id <= coalesce((select cast(value as integer) from meta where key = 'fts_rebuild_target'), 0))`);
  const ftsExtra = one("select count(*) as n from chunks_fts_docsize d where not exists (select 1 from chunks c where c.id = d.id)");
  const memoriesWithoutDocument = db
    .select({ path: memories.path })
    .from(memories)
    .where(sql`not exists (select 1 from documents d where d.path = 'memory/' || ${memories.path} || '.md')`)
    .orderBy(memories.path)
    .limit(LIST_CAP)
    .all()
    .map((r) => r.path);
  const countOf = (rows: { n: number } | undefined) => rows?.n ?? 0;

  const docs = new Map(db.select({ path: documents.path, sha256: documents.sha256 }).from(documents).where(eq(documents.origin, "file")).all().map((r) => [r.path, r.sha256]));
  const listing = listIndexableFiles({ handle });
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
  const staleChunks = countOf(db.select({ n: count() }).from(chunks).where(ne(chunks.chunkingVersion, CHUNKING_VERSION)).get());
  const consistent = integrity === "ok" && ftsMissing === 0 && ftsExtra === 0 && memoriesWithoutDocument.length === 0;
  const inSync = hashMismatches.length === 0 && missingFiles.length === 0 && notIndexed.length === 0 && staleChunks === 0;
  return {
    store: handle.store,
    ok: consistent && inSync,
    consistent,
    inSync,
    chunkingVersion: CHUNKING_VERSION,
    counts: {
      files: present.size,
      fileDocuments: docs.size,
      apiDocuments: countOf(db.select({ n: count() }).from(documents).where(eq(documents.origin, "api")).get()),
      chunks: countOf(db.select({ n: count() }).from(chunks).get()),
      memories: countOf(db.select({ n: count() }).from(memories).get()),
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
