import { getPg } from "../db/pg";
import { startEmbedWorkerPg } from "../index/embed-queue-pg";
import type { WorkerMode } from "../embed/worker-state";
import { activeStoreNamesPg } from "../db/store-lifecycle";
import { listStoreNamesPg, openStorePg } from "./stores-pg";

/**
 * The embed worker over every PostgreSQL store (DATABASE_URL set), started
 * beside the SQLite one by the server and `npm run worker`. Each round asks
 * for the process's pool again, so a database that was down at start-up is
 * picked up when it comes back.
 */
export function startStoresEmbedWorkerPg({ signal, idleMs, mode }: { signal?: AbortSignal; idleMs?: number; mode?: WorkerMode } = {}): Promise<void> {
  const pg = async () => {
    const handle = getPg();
    if (!handle) throw new Error("DATABASE_URL is not set");
    return handle;
  };
  return startEmbedWorkerPg({
    signal,
    idleMs,
    // Archived stores are left alone.
    listStores: async () => {
      const handle = await pg();
      return activeStoreNamesPg({ pg: handle, names: await listStoreNamesPg({ pg: handle }) });
    },
    openStore: async (store) => openStorePg({ pg: await pg(), store }),
    registry: async () => (await pg()).db,
    mode,
  });
}
