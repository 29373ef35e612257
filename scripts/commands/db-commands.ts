import { getConfig } from "../../lib/config";
import { getGovernance } from "../../lib/db/connection";
import { getPg } from "../../lib/db/pg";
import { listStoreNames } from "../../lib/db/store-names";
import { openStore } from "../../lib/stores/stores";
import type { Command } from "../cli-kit";

export const dbCommands: Command[] = [
  {
    name: "migrate",
    usage: "migrate",
    summary:
      "apply database migrations now (start-up does too): governance.db and every store's index.db; with DATABASE_URL, also the PostgreSQL governance schema (the ledger is served from it; stores, users and sign-in stay in governance.db and index.db)",
    run: async ({ out }) => {
      const pg = getPg();
      getGovernance();
      const stores = listStoreNames();
      for (const store of stores) openStore({ store, buildIndex: false });
      const local = `governance.db (users, sign-in, store audit rows) and ${stores.length} store(s) in ${getConfig().dataDir}`;
      if (pg) {
        const { pool } = await pg;
        const version = (await pool.query<{ value: string }>("select value from meta where key = 'schema_version'")).rows[0]?.value ?? "none";
        out(`PostgreSQL governance schema at ${version} (the ledger); migrated ${local} (stores are not on PostgreSQL yet)`, { backend: "postgres", governance: version, stores });
        return;
      }
      out(`migrated governance.db and ${stores.length} store(s) in ${getConfig().dataDir}`, { backend: "sqlite", stores });
    },
  },
];
