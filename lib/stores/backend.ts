import { letOthersRun } from "../common";
import type { z } from "zod";
import type { Engine } from "../db/engine";
import { perEngine } from "../db/engine";
import { read, type AnyStoreHandle } from "../db/port";
import { isVanishedStore } from "../db/pg-store";
import { isAppError } from "../errors";
import { withFlags, type Flagged } from "../poison";
import { deleteApiDocument, listDocumentsByPrefix, putDocuments, type DocumentSummary, type IngestResult, type putDocumentsSchema } from "../index/ingest";
import {
  type restoreMemorySchema,
  type TrashedMemory,
  type TrashedMemoryWithBody,
  getCategory,
  listAllCategories,
  listCategoryChildren,
  listMemoriesByFilter,
  listMemoryHistory,
  type CategoryChild,
  type CategoryPage,
  type createMemorySchema,
  type Memory,
  type MemoryFilter,
  type MemoryHistoryEntry,
  type MemoryWithBody,
  type setCategorySchema,
  type updateMemorySchema,
} from "../index/memories";
import type { Job } from "../index/jobs";
import type { ReindexProgress } from "../index/reindex";
import { listDocumentTitles } from "../index/titles";
import type { UnindexableFile } from "../index/files";
import { getChunkByChunkId, readChunkInDocument, type ChunkDetail, type ChunkReader } from "../index/reader";
import type { SearchHit, SearchInput, SearchResult } from "../index/search";
import type { VerifyReport } from "../index/verify";
import { storeHasContentOp, type createStoreSchema, type StoreSummary } from "./stores";
import { refusingArchivedWrites } from "../db/store-lifecycle";
import { pgStoreEngine } from "./engines/pg";
import { sqliteStoreEngine } from "./engines/sqlite";
import { factsOf, flaggingContradictions } from "../index/facts";
import { proposing, reviewedChange } from "../index/proposals";

/**
 * The stores behind one interface (docs/ARCHITECTURE.md, "Composition"):
 * routes and MCP tools call stores() and never pick a backend or open a
 * handle themselves; an unknown store is a 404 on both. What differs per
 * engine is in lib/stores/engines/{sqlite,pg}.ts, the rest is written once here.
 */

/** A store as the API describes it: on PostgreSQL there are no files (`files` is null). */
export type StoreInfo = Omit<StoreSummary, "files"> & { files: StoreSummary["files"] | null };

type StoreArg = { store: string };

export type StoresBackend = {
  kind: "sqlite" | "postgres";
  /** Start-up: the core store, and on a fresh install the `default` store. */
  ensureStartupStores: () => Promise<{ createdDefault: boolean }>;
  /** The stores described (counts, sizes); `only` picks which before any is described (a token's stores); `memoryFiles` counts each memory folder's files (SQLite; the dashboard), else null. */
  listStores: (a?: { only?: (store: string) => boolean; memoryFiles?: boolean }) => Promise<StoreInfo[]>;
  /** The names only (core first), without describing each store: for pickers and allow-list checks. */
  listStoreNames: () => Promise<string[]>;
  /** Whether a store holds anything a page would show (documents, memories, traces, learnings, thoughts): index probes, no counts. */
  storeHasContent: (a: StoreArg) => Promise<boolean>;
  createStore: (a: { input: z.input<typeof createStoreSchema>; actor: string }) => Promise<StoreInfo>;
  /** Remove a store and everything in it (admin; audited; `confirm` repeats the name); core and default cannot be deleted. */
  deleteStore: (a: { name: string; actor: string; confirm: string | undefined }) => Promise<{ deleted: string }>;
  /** Make a store read-only and closed to background work (admin; audited); reads still work. */
  archiveStore: (a: { name: string; actor: string }) => Promise<{ store: string; archived: boolean }>;
  unarchiveStore: (a: { name: string; actor: string }) => Promise<{ store: string; archived: boolean }>;
  /** `memoryFiles` counts the memory folder's files (SQLite; by default), else null. */
  describeStore: (a: StoreArg & { memoryFiles?: boolean }) => Promise<StoreInfo>;
  putDocuments: (a: StoreArg & { input: z.output<typeof putDocumentsSchema>; actor: string }) => Promise<IngestResult[]>;
  listDocuments: (a: StoreArg & { prefix: string; limit: number; offset: number }) => Promise<{ total: number; documents: DocumentSummary[] }>;
  deleteDocument: (a: StoreArg & { path: string; actor: string }) => Promise<void>;
  getChunk: (a: StoreArg & { chunkId: string }) => Promise<ChunkDetail>;
  /** The search reader: a chunk in its document, its neighbours, metadata and vector provenance. */
  readChunk: (a: StoreArg & { chunkId: string }) => Promise<ChunkReader>;
  /** fts, vector or hybrid, core included when asked (the caller's right to read core was checked with the request). */
  search: (a: StoreArg & { input: SearchInput }) => Promise<FlaggedSearchResult>;
  /** What a result list calls each document (heading, first line or file name), by path. */
  documentTitles: (a: StoreArg & { paths: string[] }) => Promise<Map<string, string>>;
  getMemory: (a: StoreArg & { memoryPath: string }) => Promise<Flagged<MemoryWithBody>>;
  listMemories: (a: StoreArg & { filter: MemoryFilter }) => Promise<{ total: number; memories: Flagged<Memory>[] }>;
  createMemory: (a: StoreArg & { input: z.output<typeof createMemorySchema>; actor: string }) => Promise<Flagged<MemoryWithBody>>;
  updateMemory: (a: StoreArg & { input: z.output<typeof updateMemorySchema>; actor: string }) => Promise<Flagged<MemoryWithBody>>;
  deleteMemory: (a: StoreArg & { memoryPath: string; actor: string }) => Promise<void>;
  /** Deleted memories kept for DUALMIND_MEMORY_TRASH_DAYS (newest first), one with its text, put back, or purged now. */
  listMemoryTrash: (a: StoreArg) => Promise<Flagged<TrashedMemory>[]>;
  getTrashedMemory: (a: StoreArg & { id: string }) => Promise<Flagged<TrashedMemoryWithBody>>;
  restoreMemory: (a: StoreArg & { input: z.output<typeof restoreMemorySchema>; actor: string }) => Promise<Flagged<MemoryWithBody>>;
  purgeTrashedMemory: (a: StoreArg & { id: string; actor: string }) => Promise<void>;
  /** A page of `parent`'s child categories within DUALMIND_LIST_MAX_BYTES; `next_offset` continues it. */
  listCategoryChildren: (a: StoreArg & { parent: string | null; limit: number; offset: number }) => Promise<CategoryPage & { next_offset: number | null }>;
  /** A page of the store's categories in path order with their recursive memory counts (the memories browser's tree). */
  listAllCategories: (a: StoreArg & { limit: number; offset?: number }) => Promise<CategoryPage>;
  /** One category with its counts, or null. */
  getCategory: (a: StoreArg & { path: string }) => Promise<CategoryChild | null>;
  /** A memory's change history from the audit log, newest first (moves followed back). */
  listMemoryHistory: (a: StoreArg & { memoryPath: string; limit: number }) => Promise<MemoryHistoryEntry[]>;
  setCategoryDescription: (a: StoreArg & { input: z.output<typeof setCategorySchema>; actor: string }) => Promise<CategoryChild>;
  /** Compare the truth (memory files; on PostgreSQL the memories table) with the index, without writing. */
  verifyStore: (a: StoreArg) => Promise<VerifyReport>;
  /** Files under memory/ the last scan could not index, with the reason (none on PostgreSQL: no files there). */
  listUnindexableFiles: (a: StoreArg) => Promise<UnindexableFile[]>;
  /** Start (or join) the store's reindex job: the derived index rebuilt from the truth. */
  startReindex: (a: StoreArg & { actor: string }) => Promise<Job>;
  /**
   * The same reindex job as startReindex (its row, its audit entry, one per store), run to the end before
   * answering (the CLI): a job another process or replica is running is waited for, and taken over if it dies.
   */
  runReindex: (a: StoreArg & { actor: string; reason?: string; onProgress?: (p: ReindexProgress) => void }) => Promise<Job>;
  /** An admin job; a store-limited caller sees only its stores' jobs. */
  getJob: (a: { id: string; stores: readonly string[] | null }) => Promise<Job | null>;
  /** Each store's latest admin job (the Admin page; admins only). */
  listLatestJobs: () => Promise<Job[]>;
};

/** The writes of a store's content: refused (409 store_archived) while it is archived, whichever surface asks. */
const CONTENT_WRITES = ["putDocuments", "deleteDocument", "createMemory", "updateMemory", "deleteMemory", "restoreMemory", "purgeTrashedMemory", "setCategoryDescription", "startReindex"] as const;

/** A search answer as shown: each hit with the flags of its path, snippet and passages. */
export type FlaggedSearchResult = Omit<SearchResult, "results"> & { results: Flagged<SearchHit>[] };

/** Operations whose items are flagged on the way out (lib/poison.ts): the engines return them unflagged. */
type FlaggedOps = "search" | "getMemory" | "createMemory" | "updateMemory" | "listMemoryTrash" | "getTrashedMemory" | "restoreMemory";
type EngineShown = {
  search: (a: StoreArg & { input: SearchInput }) => Promise<SearchResult>;
  getMemory: (a: StoreArg & { memoryPath: string }) => Promise<MemoryWithBody>;
  createMemory: (a: StoreArg & { input: z.output<typeof createMemorySchema>; actor: string }) => Promise<MemoryWithBody>;
  updateMemory: (a: StoreArg & { input: z.output<typeof updateMemorySchema>; actor: string }) => Promise<MemoryWithBody>;
  listMemoryTrash: (a: StoreArg) => Promise<TrashedMemory[]>;
  getTrashedMemory: (a: StoreArg & { id: string }) => Promise<TrashedMemoryWithBody>;
  restoreMemory: (a: StoreArg & { input: z.output<typeof restoreMemorySchema>; actor: string }) => Promise<MemoryWithBody>;
};

/** A memory or trash entry with the flags of what it shows: path, tags, source, summary and the body when it has one. */
function flaggedMemory<M extends { path: string; tags: string[]; summary: string | null; source?: string | null; body?: string }>(m: M): Flagged<M> {
  return withFlags({ item: m, fields: { path: m.path, tags: m.tags, source: m.source, summary: m.summary, body: m.body } });
}

/** Each hit with the flags of what it shows (the snippet, not the whole chunk: a response scans only what it returns). */
function flaggedSearch(r: SearchResult): FlaggedSearchResult {
  return { ...r, results: r.results.map((h) => withFlags({ item: h, fields: { path: h.path, snippet: h.snippet, passages: h.passages?.map((p) => p.snippet) } })) };
}

/** Operations written once over the port: only how a store opens differs. */
type WrittenOnce = "listStores" | "storeHasContent" | "putDocuments" | "deleteDocument" | "listDocuments" | "getChunk" | "readChunk" | "documentTitles" | "listMemories" | "listCategoryChildren" | "listAllCategories" | "getCategory" | "listMemoryHistory";

/**
 * What differs per engine (store layout, where memories live, search, the
 * reindex job), in lib/stores/engines/{sqlite,pg}.ts, and the one way to open
 * a store's handle there, which graph, recall and embeddings use too.
 */
export type StoreEngine = Omit<StoresBackend, WrittenOnce | FlaggedOps> & EngineShown & {
  /** The store's handle (404 when unknown); `buildIndex: false` skips SQLite's rebuild on open (the reindex job is the build). */
  open: (store: string, options?: { buildIndex?: boolean }) => Promise<AnyStoreHandle>;
  /** Core's read-only handle beside `handle` when asked and `handle` is not core, else null. */
  openCore: (handle: AnyStoreHandle, includeCore: boolean) => Promise<AnyStoreHandle | null>;
  /** createMemory on a handle given (a proposal's transaction: lib/index/proposals.ts); synchronous on SQLite. */
  createMemoryIn: (a: { handle: AnyStoreHandle; input: z.output<typeof createMemorySchema>; actor: string }) => MemoryWithBody | Promise<MemoryWithBody>;
  /** updateMemory on a handle given (a reviewer's edit in its approval's transaction: lib/index/proposals.ts); synchronous on SQLite. */
  updateMemoryIn: (a: { handle: AnyStoreHandle; input: z.output<typeof updateMemorySchema>; actor: string }) => MemoryWithBody | Promise<MemoryWithBody>;
};

const storeEngines = new WeakMap<Engine, StoreEngine>();

/** The store engine of `engine`, built once per engine. */
export function storeEngineOf(engine: Engine): StoreEngine {
  let found = storeEngines.get(engine);
  if (!found) {
    found = engine.kind === "pg" ? pgStoreEngine(engine.pg) : sqliteStoreEngine;
    storeEngines.set(engine, found);
  }
  return found;
}

/** The stores on one engine: the engine's own operations and the ones written once. */
export function storesOn(engine: Engine): StoresBackend {
  const { open: on, openCore: _openCore, createMemoryIn, updateMemoryIn: _updateMemoryIn, ...own } = storeEngineOf(engine);
  return refusingArchivedWrites(
    { backend: {
      ...own,
      search: async (a) => flaggedSearch(await own.search(a)),
      // Facts (lib/index/facts.ts): a single memory read carries its unresolved contradictions in its flags.
      getMemory: flaggingContradictions({ kind: "memory", open: on, get: async (a: StoreArg & { memoryPath: string }) => flaggedMemory(await own.getMemory(a)), idOf: (m) => m.path }),
      createMemory: proposing({
        kind: "memory", facts: factsOf({ kind: "memory" }),
        open: on,
        createIn: ({ handle, input, actor }: Parameters<typeof createMemoryIn>[0]) => {
          const created = createMemoryIn({ handle, input, actor });
          return created instanceof Promise ? created.then(flaggedMemory) : flaggedMemory(created);
        },
        idOf: (m) => m.path,
        actorOf: (a) => a.actor,
      }),
      // Under a review policy an untrusted agent does not change, move, delete or bring back a memory (lib/index/proposals.ts).
      updateMemory: reviewedChange({ kind: "memory", open: on, change: async (a: StoreArg & { input: z.output<typeof updateMemorySchema>; actor: string }) => flaggedMemory(await own.updateMemory(a)), idOf: (a) => a.input.path, fieldsOf: (a) => ({ body: a.input.body, summary: a.input.summary, tags: a.input.tags }) }),
      deleteMemory: reviewedChange({ kind: "memory", open: on, change: own.deleteMemory, idOf: (a) => a.memoryPath }),
      restoreMemory: reviewedChange({ kind: "memory", open: on, change: async (a: StoreArg & { input: z.output<typeof restoreMemorySchema>; actor: string }) => flaggedMemory(await own.restoreMemory(a)), idOf: (a) => a.input.to }),
      listMemoryTrash: async (a) => (await own.listMemoryTrash(a)).map(flaggedMemory),
      getTrashedMemory: async (a) => flaggedMemory(await own.getTrashedMemory(a)),
      listStores: async ({ only = () => true, memoryFiles = false } = {}) => {
        const out: StoreInfo[] = [];
        for (const store of (await own.listStoreNames()).filter(only)) {
          try {
            out.push(await own.describeStore({ store, memoryFiles }));
          } catch (e) {
            // Deleted (by another process or replica) since the names were read: not listed.
            if (!(isAppError(e) && e.code === "not_found") && !isVanishedStore(e)) throw e;
          }
          // SQLite describes a store synchronously (its open and row counts): other requests are served between stores.
          await letOthersRun();
        }
        return out;
      },
      storeHasContent: async ({ store }) => read(await on(store), storeHasContentOp()),
      putDocuments: async ({ store, ...a }) => putDocuments({ handle: await on(store), ...a }),
      deleteDocument: async ({ store, ...a }) => deleteApiDocument({ handle: await on(store), ...a }),
      listDocuments: async ({ store, ...a }) => listDocumentsByPrefix({ handle: await on(store), ...a }),
      getChunk: async ({ store, ...a }) => getChunkByChunkId({ handle: await on(store), ...a }),
      readChunk: async ({ store, ...a }) => readChunkInDocument({ handle: await on(store), ...a }),
      documentTitles: async ({ store, ...a }) => listDocumentTitles({ handle: await on(store), ...a }),
      listMemories: async ({ store, ...a }) => {
        const page = await listMemoriesByFilter({ handle: await on(store), ...a });
        return { ...page, memories: page.memories.map(flaggedMemory) };
      },
      listCategoryChildren: async ({ store, ...a }) => listCategoryChildren({ handle: await on(store), ...a }),
      listAllCategories: async ({ store, ...a }) => listAllCategories({ handle: await on(store), ...a }),
      getCategory: async ({ store, ...a }) => getCategory({ handle: await on(store), ...a }),
      listMemoryHistory: async ({ store, ...a }) => listMemoryHistory({ handle: await on(store), ...a }),
    },
    writes: CONTENT_WRITES,
  });
}

/** The stores backend of this process: PostgreSQL when DATABASE_URL is set, else SQLite. */
export const stores: () => StoresBackend = perEngine(storesOn);

export { notServedOnPostgres, storesOnPostgres } from "./on-postgres";
