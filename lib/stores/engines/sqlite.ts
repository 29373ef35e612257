import type { StoreHandle } from "../../db/connection";
import { listStoreNames } from "../../db/store-names";
import { createMemory, deleteMemory, getMemoryByPath, getTrashedMemory, listMemoryTrash, purgeTrashedMemory, restoreMemory, setCategoryDescription, updateMemory, type MemoryWithBody } from "../../index/memories";
import { getJobById, listLatestJobs, runReindexJob, startReindexJob } from "../../index/jobs";
import { lastUnindexableFiles } from "../../index/reindex";
import { searchStore } from "../../index/search";
import { verifyStoreAsync } from "../../index/verify";
import type { StoreEngine } from "../backend";
import { createStore, deleteStore, describeStore, ensureCoreStore, ensureDefaultStore, openCoreFor, openStore, removeDeletedStoreLeftovers, setStoreArchived, storeFileBytes, type StoreSummary } from "../stores";
import { forgetGoneStores, lookAtStore, storeLooks } from "../../db/store-looks";
import { isStoreArchived } from "../../db/store-lifecycle";

/** The store list's last description of each store (read again when its files change). */
const listLooks = storeLooks<StoreSummary>("list");

/**
 * The stores as files in DATA_DIR: one index.db and memory/ folder per store
 * (the truth is the files). The functions are synchronous; wrapped, a throw
 * becomes a rejection like on PostgreSQL.
 */
export const sqliteStoreEngine: StoreEngine = {
  kind: "sqlite",
  open: async (store, { buildIndex } = {}) => openStore({ store, buildIndex }),
  openCore: async (handle, includeCore) => openCoreFor({ handle: handle as StoreHandle, includeCore }),
  ensureStartupStores: async () => {
    ensureCoreStore();
    removeDeletedStoreLeftovers();
    return { createdDefault: ensureDefaultStore() };
  },
  listStoreNames: async () => listStoreNames(),
  createStore: async (a) => createStore(a),
  deleteStore: async (a) => deleteStore(a),
  archiveStore: async (a) => setStoreArchived({ ...a, archive: true }),
  unarchiveStore: async (a) => setStoreArchived({ ...a, archive: false }),
  describeStore: async ({ store, memoryFiles }) => {
    if (memoryFiles !== false) return describeStore({ handle: openStore({ store }), memoryFiles });
    // A list describes every store: a look, not a use, that opens no closed store whose files are unchanged.
    if (listLooks.size > listStoreNames().length) forgetGoneStores({ looks: listLooks, stores: listStoreNames() });
    const summary = await lookAtStore({ store, looks: listLooks, open: (s) => openStore({ store: s, use: false }), look: (handle) => describeStore({ handle, memoryFiles: false }) });
    return { ...summary, archived: isStoreArchived(store), files: { ...storeFileBytes({ store }), memory_files: null } };
  },
  search: async ({ store, input }) => {
    const handle = openStore({ store });
    return searchStore({ handle, core: openCoreFor({ handle, includeCore: input.include_core }), input });
  },
  // The SQLite writes answer the memory read back from its file (with its body).
  getMemory: async ({ store, ...a }) => getMemoryByPath({ handle: openStore({ store }), ...a }),
  createMemory: async ({ store, ...a }) => createMemory({ handle: openStore({ store }), ...a }) as MemoryWithBody,
  createMemoryIn: ({ handle, ...a }) => createMemory({ handle: handle as StoreHandle, ...a }) as MemoryWithBody,
  updateMemory: async ({ store, ...a }) => updateMemory({ handle: openStore({ store }), ...a }) as MemoryWithBody,
  updateMemoryIn: ({ handle, ...a }) => updateMemory({ handle: handle as StoreHandle, ...a }) as MemoryWithBody,
  deleteMemory: async ({ store, ...a }) => deleteMemory({ handle: openStore({ store }), ...a }),
  listMemoryTrash: async ({ store }) => listMemoryTrash({ handle: openStore({ store }) }),
  getTrashedMemory: async ({ store, ...a }) => getTrashedMemory({ handle: openStore({ store }), ...a }),
  restoreMemory: async ({ store, ...a }) => restoreMemory({ handle: openStore({ store }), ...a }) as MemoryWithBody,
  purgeTrashedMemory: async ({ store, ...a }) => purgeTrashedMemory({ handle: openStore({ store }), ...a }),
  setCategoryDescription: async ({ store, ...a }) => setCategoryDescription({ handle: openStore({ store }), ...a }),
  verifyStore: ({ store }) => verifyStoreAsync({ handle: openStore({ store }) }),
  listUnindexableFiles: async ({ store }) => lastUnindexableFiles({ handle: openStore({ store }) }),
  // The job is the build: no silent rebuild on open first (see openStore).
  startReindex: async ({ store, actor }) => startReindexJob({ handle: openStore({ store, buildIndex: false }), actor }),
  runReindex: async ({ store, ...a }) => runReindexJob({ handle: openStore({ store, buildIndex: false }), ...a }),
  getJob: async (a) => getJobById(a),
  listLatestJobs: async () => listLatestJobs(),
};

