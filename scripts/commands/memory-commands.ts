import path from "node:path";
import { actorOf } from "../../lib/auth/actor";
import { getPg } from "../../lib/db/pg";
import type { PgStoreHandle } from "../../lib/db/pg-store";
import { exportMemoriesPg, importMemoriesPg } from "../../lib/index/memories-pg";
import { openStorePg } from "../../lib/stores/engines/pg";
import { flagString, UsageError, type Command, type Flags } from "../cli-kit";

const ACTOR = actorOf("cli");

/**
 * The store handle and folder of an export or import (`--store` and `dirFlag`).
 * They need the PostgreSQL backend: on SQLite the memory folder itself is the truth.
 */
async function storeAndFolder(flags: Flags, dirFlag: "out" | "from"): Promise<{ store: string; handle: PgStoreHandle; dir: string }> {
  const store = flagString(flags, "store");
  const dir = flagString(flags, dirFlag);
  if (!store || !dir) throw new UsageError(`--store and --${dirFlag} are required`);
  const pg = getPg();
  if (!pg) throw new UsageError(`memories export/import are for DATABASE_URL (PostgreSQL), where memories live in the database; on SQLite the memories of ${store} already are files, under $DATA_DIR/stores/${store}/memory`);
  return { store, handle: await openStorePg({ pg: await pg, store }), dir: path.resolve(dir) };
}

export const memoryCommands: Command[] = [
  {
    name: "memories export",
    usage: "memories export --store S --out DIR [--force]",
    summary:
      "PostgreSQL: write a store's memories to DIR as <category>/<slug>.md files (the format of the memory folder), byte for byte; unchanged files are left alone, and a same-named file with other content stops the export (nothing written) unless --force replaces it",
    run: async ({ flags, out }) => {
      const { store, handle, dir } = await storeAndFolder(flags, "out");
      const r = await exportMemoriesPg({ handle, dir, force: flags.force === true });
      out(`exported ${r.memories} memories and ${r.categories} category descriptions of ${store} to ${r.dir}: ${r.written} written (${r.overwritten} replaced), ${r.unchanged} unchanged`, r);
    },
  },
  {
    name: "memories import",
    usage: "memories import --store S --from DIR",
    summary: "PostgreSQL: read a folder of memory files (an export, or a SQLite store's memory/ folder) into a store; memories not in the folder are kept",
    run: async ({ flags, out }) => {
      const { store, handle, dir } = await storeAndFolder(flags, "from");
      const r = await importMemoriesPg({ handle, dir, actor: ACTOR });
      const skipped = r.skipped.map((s) => `\n  skipped ${s.path}: ${s.reason}`).join("");
      out(`imported into ${store}: ${r.added} added, ${r.changed} changed, ${r.unchanged} unchanged, ${r.categories} category descriptions${skipped}`, r);
      return r.skipped.length > 0 ? 1 : 0;
    },
  },
];
