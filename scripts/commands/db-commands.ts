import { getConfig } from "../../lib/config";
import { getGovernance, getStoreDb } from "../../lib/db/connection";
import { getPg } from "../../lib/db/pg";
import { listStoreNames } from "../../lib/db/store-names";
import { listStoreNamesPg, openStorePg } from "../../lib/stores/engines/pg";
import { migratePgToSqlite, migrateSqliteToPg, type MigrateDataResult } from "../../lib/backend/migrate-data";
import { checkStoresCopyable, migrateStoresToPg, migrateStoresToSqlite, storeCopyReport } from "../../lib/stores/migrate-stores";
import { flagString, UsageError, type Command } from "../cli-kit";

function migrateDataReport(r: MigrateDataResult): string {
  const width = Math.max(...r.tables.map((t) => t.table.length));
  const lines = r.tables.map((t) => `${t.table.padEnd(width)}  ${String(t.rows).padStart(8)}  ${t.sha256}`);
  const audit = r.audit.ok ? `audit chain verifies on the target (${r.audit.entries} entries)` : `audit chain BROKEN on the target: ${JSON.stringify(r.audit)}`;
  return [`copied ${r.from} → ${r.to}: every table's row count and sha256 match the source`, ...lines, audit].join("\n");
}

export const dbCommands: Command[] = [
  {
    name: "migrate",
    usage: "migrate",
    summary:
      "apply database migrations now (start-up does too): governance.db and every store's index.db; with DATABASE_URL, also the PostgreSQL governance schema (the ledger, users, sign-in) and every PostgreSQL store's schema (the stores the API, MCP and CLI serve)",
    run: async ({ out }) => {
      const pg = getPg();
      getGovernance();
      const stores = listStoreNames();
      // getStoreDb applies a store's migrations; openStore would refuse local stores with DATABASE_URL.
      for (const store of stores) getStoreDb({ store });
      const local = `governance.db (store audit rows) and ${stores.length} store(s) in ${getConfig().dataDir}`;
      if (pg) {
        const { pool } = await pg;
        const version = (await pool.query<{ value: string }>("select value from meta where key = 'schema_version'")).rows[0]?.value ?? "none";
        // Opening a PostgreSQL store applies its pending store migrations (under its advisory lock).
        const pgStores = await listStoreNamesPg({ pg: await pg });
        for (const store of pgStores) await openStorePg({ pg: await pg, store });
        out(
          `PostgreSQL governance schema at ${version} (the ledger, users, sign-in) and ${pgStores.length} PostgreSQL store(s) (what the API, MCP and CLI serve); migrated ${local} (local files, not served while DATABASE_URL is set: what migrate-data --to pg copies)`,
          { backend: "postgres", governance: version, stores, pgStores },
        );
        return;
      }
      out(`migrated governance.db and ${stores.length} store(s) in ${getConfig().dataDir}`, { backend: "sqlite", stores });
    },
  },
  {
    name: "migrate-data",
    usage: "migrate-data --to pg|sqlite [--replace] [--governance-only] [--allow-loss]",
    summary:
      "copy the governance data (ledger, dialectic sessions, tokens, users, sign-in throttle, audit chain, metrics, health events) between governance.db in DATA_DIR and the PostgreSQL database in DATABASE_URL, in one transaction; per table the row count and a sha256 of the rows must match the source or nothing is written, then the audit chain is verified on the target; a target with rows is refused unless --replace (which empties it first). Then every store (unless --governance-only): its memories (files on SQLite, the memories table on PostgreSQL, byte for byte, with category descriptions), the documents sent by API, and its primary tables row for row with their ids (traces, learnings, reflection settings, recall history, chains, thoughts, the graph, working memory), one transaction per PostgreSQL store; chunks are rebuilt on the target and every trace, learning, thought, node and chunk is queued for a vector there; per store the sorted (path, sha256) of the documents, the chunk count and every primary table's row count and sha256 must match the source or that store's copy is undone. Not copied: documents of source roots on this machine — a store holding any is refused before anything is written unless --allow-loss (then they are left behind and counted in the report). A PostgreSQL store that already holds memories, documents or primary rows is refused unless --replace; a SQLite one always (remove its folder first)",
    run: async ({ flags, out }) => {
      const to = flagString(flags, "to");
      if (to !== "pg" && to !== "sqlite") throw new UsageError("--to pg or --to sqlite is required");
      const pg = getPg();
      if (!pg) throw new UsageError("DATABASE_URL must name the PostgreSQL database to copy to or from");
      const { db } = await pg;
      const replace = flags.replace === true;
      const withStores = flags["governance-only"] !== true;
      // Refused before anything is written (the governance copy included) when a store holds rows this copy would leave behind.
      if (withStores) await checkStoresCopyable({ pg: await pg, to, allowLoss: flags["allow-loss"] === true });
      const result = to === "pg" ? await migrateSqliteToPg({ db, replace }) : await migratePgToSqlite({ db, replace });
      if (!result.audit.ok) {
        out(migrateDataReport(result), result);
        process.exitCode = 1;
        return;
      }
      const stores = !withStores ? [] : to === "pg" ? await migrateStoresToPg({ pg: await pg, replace }) : await migrateStoresToSqlite({ pg: await pg, replace });
      out([migrateDataReport(result), storeCopyReport(stores)].join("\n"), { ...result, stores });
    },
  },
];
