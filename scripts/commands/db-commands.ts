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
    summary: "apply database migrations now (start-up does too): governance.db and every store's index.db; with DATABASE_URL, the PostgreSQL governance schema (in progress)",
    run: async ({ out }) => {
      const pg = getPg();
      if (pg) {
        const { pool } = await pg;
        const version = (await pool.query<{ value: string }>("select value from meta where key = 'schema_version'")).rows[0]?.value ?? "none";
        out(`PostgreSQL governance schema at ${version} (stores are not on PostgreSQL yet)`, { backend: "postgres", governance: version });
        return;
      }
      getGovernance();
      const stores = listStoreNames();
      for (const store of stores) openStore({ store, buildIndex: false });
      out(`migrated governance.db and ${stores.length} store(s) in ${getConfig().dataDir}`, { backend: "sqlite", stores });
    },
  },
];
