import fs from "node:fs";
import path from "node:path";
import { getGovernance, getStoreDb } from "@/lib/db/connection";
import { getPg } from "@/lib/db/pg";

/** Row counts of every table in governance.db and the given stores, plus the store directories: "nothing written" means this does not change. */
export function snapshotDatabases({ dataDir, stores }: { dataDir: string; stores: string[] }): string {
  const parts: string[] = [];
  for (const db of [getGovernance().sqlite, ...stores.map((s) => getStoreDb({ store: s }).sqlite)]) {
    const tables = (db.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name").all() as { name: string }[]).map((t) => t.name);
    for (const t of tables) {
      try {
        parts.push(`${t}=${(db.prepare(`select count(*) as n from "${t}"`).get() as { n: number }).n}`);
      } catch {
        // vec0 shadow tables without the extension loaded; the others still count.
      }
    }
  }
  parts.push(fs.readdirSync(path.join(dataDir, "stores")).sort().join(","));
  return parts.join(" ");
}

/** The same on PostgreSQL (DATABASE_URL): row counts of every table of every schema (governance in public, one schema per store), in one statement. */
export async function snapshotPgDatabase({ dataDir }: { dataDir: string }): Promise<string> {
  const pg = await getPg()!;
  // pg_tables, not information_schema.tables: the same tables (ordinary and partitioned), read from the catalog without
  // the standard view's privilege checks. Each count runs inside the statement (query_to_xml, names quoted by format's
  // %I): a fraction of the time of one union of a count per table, which the server plans as a whole every call.
  const counts = (
    await pg.pool.query<{ k: string; n: number }>(
      `select schemaname || '.' || tablename as k, (xpath('/row/n/text()', query_to_xml(format('select count(*) as n from %I.%I', schemaname, tablename), false, true, '')))[1]::text::int as n
       from pg_tables where schemaname not in ('pg_catalog', 'information_schema') order by schemaname, tablename`,
    )
  ).rows;
  return [...counts.map((c) => `${c.k}=${c.n}`), fs.readdirSync(dataDir).sort().join(",")].join(" ");
}
