/**
 * System 1 index on a real corpus nobody here wrote: every markdown file
 * under node_modules/. dualmind (SQLite FTS5, chunked, persisted) side by side
 * with MiniSearch (in-memory, whole documents) on the same files, same run.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import MiniSearch from "minisearch";
import { resetConfigForTests } from "../lib/config";
import { closeAllDatabases, getStoreDb } from "../lib/db/connection";
import { listIndexableFiles } from "../lib/index/files";
import { decodeText } from "../lib/index/ingest";
import { reindexStore } from "../lib/index/reindex";
import { searchInputSchema, searchStore } from "../lib/index/search";
import { createStore } from "../lib/stores/stores";
import { percentile, printTable } from "./table";

const QUERIES = 300;

/** Deterministic queries: two longer words from every k-th document, as a user who half-remembers a page would type. */
function makeQueries(texts: string[]): string[] {
  const queries: string[] = [];
  const step = Math.max(1, Math.floor(texts.length / QUERIES));
  for (let i = 0; i < texts.length && queries.length < QUERIES; i += step) {
    const words = (texts[i].toLowerCase().match(/[a-z]{6,}/g) ?? []).filter((w, j, all) => all.indexOf(w) === j);
    if (words.length >= 2) queries.push(`${words[Math.floor(words.length / 3)]} ${words[Math.floor((2 * words.length) / 3)]}`);
  }
  return queries;
}

function timeQueries(queries: string[], run: (q: string) => string | undefined): { samples: number[]; top: (string | undefined)[] } {
  const samples: number[] = [];
  const top: (string | undefined)[] = [];
  for (const q of queries) {
    const t = performance.now();
    top.push(run(q));
    samples.push(performance.now() - t);
  }
  return { samples, top };
}

export default async function indexBench(): Promise<void> {
  const corpus = path.resolve("node_modules");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-bench-"));
  const saved = { ...process.env };
  Object.assign(process.env, {
    DATA_DIR: dataDir,
    DUALMIND_SOURCE_ROOTS: `bench=${corpus}`,
    DUALMIND_SOURCE_INCLUDE: "**/*.md",
    DUALMIND_SOURCE_EXCLUDE: "**/.git/**",
    DUALMIND_DISABLE_VECTORS: "true",
  });
  resetConfigForTests();
  try {
    createStore({ input: { name: "bench" }, actor: "bench" });
    const files = listIndexableFiles({ store: "bench" }).files;
    const docs: { id: number; path: string; text: string }[] = [];
    for (const f of files) {
      const text = decodeText(fs.readFileSync(f.abs));
      if (text !== null) docs.push({ id: docs.length, path: f.docPath, text });
    }
    const mb = docs.reduce((n, d) => n + Buffer.byteLength(d.text), 0) / 1e6;

    const full = reindexStore({ store: "bench" });
    const unchanged = reindexStore({ store: "bench" });
    const { sqlite } = getStoreDb("bench");
    const chunkCount = (sqlite.prepare("select count(*) as n from chunks").get() as { n: number }).n;
    const dbBytes = fs.statSync(path.join(dataDir, "stores", "bench", "index.db")).size + fs.statSync(path.join(dataDir, "stores", "bench", "index.db-wal")).size;

    let t = performance.now();
    const mini = new MiniSearch<{ id: number; path: string; text: string }>({ fields: ["text"], storeFields: ["path"] });
    mini.addAll(docs);
    const miniMs = performance.now() - t;
    t = performance.now();
    const miniAgain = new MiniSearch<{ id: number; path: string; text: string }>({ fields: ["text"], storeFields: ["path"] });
    miniAgain.addAll(docs);
    const miniAgainMs = performance.now() - t;

    const queries = makeQueries(docs.map((d) => d.text));
    // Warm both once so neither pays first-call costs inside the timings.
    searchStore({ store: "bench", input: searchInputSchema.parse({ q: queries[0] }) });
    mini.search(queries[0], { combineWith: "AND" });
    const fts = timeQueries(queries, (q) => searchStore({ store: "bench", input: searchInputSchema.parse({ q, limit: 10 }) }).results[0]?.path);
    const ftsAny = timeQueries(queries, (q) => searchStore({ store: "bench", input: searchInputSchema.parse({ q, limit: 10, match: "any" }) }).results[0]?.path);
    const ms = timeQueries(queries, (q) => mini.search(q, { combineWith: "AND" })[0]?.path as string | undefined);
    const agree = fts.top.filter((p, i) => p !== undefined && p === ms.top[i]).length;
    const answered = (top: (string | undefined)[]) => top.filter(Boolean).length;

    printTable(`Corpus: ${docs.length} markdown files under node_modules/ (${mb.toFixed(1)} MB), ${queries.length} queries of two words`, [
      { engine: "dualmind (FTS5, on disk)", "full index files/s": Math.round(docs.length / (full.durationMs / 1000)), "full index s": full.durationMs / 1000, "unchanged reindex files/s": Math.round(docs.length / (Math.max(1, unchanged.durationMs) / 1000)), "query p50 ms": percentile(fts.samples, 50), "query p95 ms": percentile(fts.samples, 95), "queries with a hit": answered(fts.top), size: `${chunkCount} chunks, ${(dbBytes / 1e6).toFixed(1)} MB db` },
      { engine: "dualmind, match=any", "full index files/s": "", "full index s": "", "unchanged reindex files/s": "", "query p50 ms": percentile(ftsAny.samples, 50), "query p95 ms": percentile(ftsAny.samples, 95), "queries with a hit": answered(ftsAny.top), size: "" },
      { engine: "MiniSearch 7.2 (in memory)", "full index files/s": Math.round(docs.length / (miniMs / 1000)), "full index s": miniMs / 1000, "unchanged reindex files/s": `${Math.round(docs.length / (miniAgainMs / 1000))} (rebuilds: no persistence)`, "query p50 ms": percentile(ms.samples, 50), "query p95 ms": percentile(ms.samples, 95), "queries with a hit": answered(ms.top), size: `${docs.length} documents, heap only` },
    ]);
    printTable("Agreement", [
      {
        "same top document": `${agree}/${queries.length}`,
        note: "dualmind ranks chunks (bm25; match=all needs both words in one chunk), MiniSearch whole documents (BM25+, AND over the document)",
      },
    ]);
  } finally {
    closeAllDatabases();
    process.env = saved;
    resetConfigForTests();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
