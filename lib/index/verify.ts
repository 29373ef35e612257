import { count, eq, ne, sql } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { chunks, documents, memories } from "../db/schema/index";
import { CHUNKING_VERSION } from "./chunking";
import { readFileNoFollow } from "./contained-fs";
import { listIndexableFiles, type UnindexableFile } from "./files";
import { memoryTextProblem } from "./frontmatter";
import { decodeText } from "./ingest";
import { runSteps, runStepsYielding } from "./reindex";
import { sha256Hex } from "../common";
import { getConfig } from "../config";
import { runWithinBudget, startQueryBudget } from "../db/query-budget";
import { isAppError } from "../errors";
import { checkStoreUsage, usageAgrees, type StoreUsageCheck } from "../db/store-usage";

const LIST_CAP = 100;

type CountRow = { n: number };

export type VerifyReport = {
  store: string;
  /** consistent and inSync. */
  ok: boolean;
  /** The database agrees with itself: SQLite integrity, FTS mirrors chunks, memories have their documents. */
  consistent: boolean;
  /** The database mirrors the files: no mismatches, no missing files, nothing unindexed, nothing stale. */
  in_sync: boolean;
  chunking_version: number;
  counts: { files: number; file_documents: number; api_documents: number; chunks: number; memories: number; skipped: number };
  integrity: string;
  fts_missing: number;
  fts_extra: number;
  memories_without_document: string[];
  hash_mismatches: string[];
  missing_files: string[];
  not_indexed: string[];
  /** Files under memory/ that cannot be indexed as they are, with the reason (name, size, encoding, frontmatter, conflict markers); any makes inSync false. */
  unindexable: UnindexableFile[];
  stale_chunks: number;
  /** The store's running total (DUALMIND_MAX_STORE_BYTES) beside a recount from its rows; a disagreement makes consistent false (a reindex recounts). */
  usage: StoreUsageCheck;
  duration_ms: number;
};

/** Files read and hashed between two yields to the event loop (and at most this many bytes). */
const YIELD_EVERY_FILES = 32;
const YIELD_EVERY_BYTES = 4 * 2 ** 20;

/** SQLite's quick_check within the query budget: a store too big to check in time is reported not checked (run `pragma integrity_check` offline), not held up. */
function quickCheck(handle: StoreHandle): string {
  const budget = startQueryBudget({ hint: "not run", budgetMs: getConfig().queryBudgetMs });
  try {
    return runWithinBudget({ sqlite: handle.sqlite, budget, fn: () => (handle.sqlite.pragma("quick_check", { simple: true }) as string) ?? "unknown" });
  } catch (e) {
    if (isAppError(e) && e.code === "query_too_expensive") return `not checked: quick_check did not finish within the ${budget.budgetMs} ms query budget (DUALMIND_QUERY_BUDGET_MS)`;
    throw e;
  }
}

/** The integrity check that ran out of its budget is not a failure: the report says it was not checked. */
const integrityOk = (integrity: string) => integrity === "ok" || integrity.startsWith("not checked:");

/** Compare files with the index without writing anything (synchronously: tests, restore). Lists are capped at 100 paths each. */
export function verifyStore({ handle }: { handle: StoreHandle }): VerifyReport {
  return runSteps(verifySteps({ handle }));
}

const g = globalThis as unknown as { __dualmindVerifying?: Map<string, Promise<VerifyReport>> };
const verifying = (g.__dualmindVerifying ??= new Map());

/** verifyStore for requests: files hashed a few at a time between event-loop turns; one verify per store at a time (a second ask shares its report). */
export function verifyStoreAsync({ handle }: { handle: StoreHandle }): Promise<VerifyReport> {
  const running = verifying.get(handle.store);
  if (running) return running;
  const run = runStepsYielding(verifySteps({ handle })).finally(() => verifying.delete(handle.store));
  verifying.set(handle.store, run);
  return run;
}

function* verifySteps({ handle }: { handle: StoreHandle }): Generator<void, VerifyReport> {
  const started = performance.now();
  const { sqlite, db } = handle;
  const integrity = quickCheck(handle);
  yield;
  // FTS5 shadow tables are not in the Drizzle schema.
  const one = (query: string) => (sqlite.prepare(query).get() as CountRow).n;
  // The FTS index stores one docsize row per indexed chunk rowid: compare both ways. Rows a pending
  // tokenizer rebuild has still to index (fts-rebuild.ts) are not missing: they are on their way.
  const ftsMissing = one(`select count(*) as n from chunks c where not exists (select 1 from chunks_fts_docsize d where d.id = c.id)
    and not (c.id > coalesce((select cast(value as integer) from meta where key = 'fts_rebuilt_through'), 0)
             and c.id <= coalesce((select cast(value as integer) from meta where key = 'fts_rebuild_target'), 0))`);
  yield;
  const ftsExtra = one("select count(*) as n from chunks_fts_docsize d where not exists (select 1 from chunks c where c.id = d.id)");
  yield;
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
  const listing = listIndexableFiles({ store: handle.store });
  const hashMismatches: string[] = [];
  const notIndexed: string[] = [];
  const unindexable: UnindexableFile[] = [...listing.unindexable];
  const present = new Set<string>();
  let binary = 0;
  let sinceYield = { files: 0, bytes: 0 };
  for (const f of listing.files) {
    if (sinceYield.files >= YIELD_EVERY_FILES || sinceYield.bytes >= YIELD_EVERY_BYTES) {
      sinceYield = { files: 0, bytes: 0 };
      yield;
    }
    let bytes: Buffer;
    try {
      bytes = readFileNoFollow({ file: f.abs, what: f.docPath }).bytes;
    } catch {
      continue;
    }
    sinceYield.files++;
    sinceYield.bytes += bytes.length;
    const memoryFile = f.docPath.startsWith("memory/");
    const text = decodeText(bytes);
    if (text === null) {
      binary++;
      if (memoryFile) unindexable.push({ path: f.docPath, reason: "not text: binary, or an encoding other than UTF-8 or Latin-1" });
      continue;
    }
    const problem = memoryFile ? memoryTextProblem(text) : null;
    if (problem) {
      unindexable.push({ path: f.docPath, reason: problem });
      // Its last good version may still be indexed: not a missing file.
      if (docs.has(f.docPath)) present.add(f.docPath);
      continue;
    }
    present.add(f.docPath);
    const sha = docs.get(f.docPath);
    if (sha === undefined) notIndexed.push(f.docPath);
    else if (sha !== sha256Hex(text)) hashMismatches.push(f.docPath);
  }
  yield;
  unindexable.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const missingFiles = [...docs.keys()].filter((p) => !present.has(p)).sort();
  const staleChunks = countOf(db.select({ n: count() }).from(chunks).where(ne(chunks.chunkingVersion, CHUNKING_VERSION)).get());
  const usage = checkStoreUsage(sqlite);
  const consistent = integrityOk(integrity) && ftsMissing === 0 && ftsExtra === 0 && memoriesWithoutDocument.length === 0 && usageAgrees(usage);
  const inSync = hashMismatches.length === 0 && missingFiles.length === 0 && notIndexed.length === 0 && unindexable.length === 0 && staleChunks === 0;
  return {
    store: handle.store,
    ok: consistent && inSync,
    usage,
    consistent,
    in_sync: inSync,
    chunking_version: CHUNKING_VERSION,
    counts: {
      files: present.size,
      file_documents: docs.size,
      api_documents: countOf(db.select({ n: count() }).from(documents).where(eq(documents.origin, "api")).get()),
      chunks: countOf(db.select({ n: count() }).from(chunks).get()),
      memories: countOf(db.select({ n: count() }).from(memories).get()),
      skipped: binary + listing.skipped.oversized + listing.skipped.badName + listing.skipped.symlink,
    },
    integrity,
    fts_missing: ftsMissing,
    fts_extra: ftsExtra,
    memories_without_document: memoriesWithoutDocument,
    hash_mismatches: hashMismatches.slice(0, LIST_CAP),
    missing_files: missingFiles.slice(0, LIST_CAP),
    not_indexed: notIndexed.slice(0, LIST_CAP),
    unindexable: unindexable.slice(0, LIST_CAP),
    stale_chunks: staleChunks,
    duration_ms: Math.round(performance.now() - started),
  };
}
