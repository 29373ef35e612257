/**
 * `npm run worker`: the embed worker as its own process (set
 * DUALMIND_EMBED_WORKER=false on the server to run only this one). Any number
 * can run against one DATA_DIR: claims are atomic, so no row is embedded twice.
 */
import { bootstrapApp } from "../lib/bootstrap";
import { closeAllDatabases } from "../lib/db/connection";
import { log } from "../lib/log";
import { startEmbedWorker } from "../lib/embed/worker";
import { getConfig } from "../lib/config";
import { closePg } from "../lib/db/pg";
import { startStoresEmbedWorkerPg } from "../lib/stores/engines/pg";

const stop = new AbortController();
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => stop.abort());
// No top-level await: tsx runs scripts as CommonJS.
bootstrapApp()
  .then(() => {
    log("info", "embed worker started", { pid: process.pid });
    // With DATABASE_URL, also the PostgreSQL stores' queue (claims keep any number of workers apart).
    return Promise.all([startEmbedWorker({ signal: stop.signal }), getConfig().databaseUrl ? startStoresEmbedWorkerPg({ signal: stop.signal, mode: "separate" }) : undefined]);
  })
  .then(async () => {
    closeAllDatabases();
    await closePg();
    log("info", "embed worker stopped");
  })
  .catch((e) => {
    log("error", "embed worker crashed", { error: (e as Error).stack });
    process.exit(1);
  });
