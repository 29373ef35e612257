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
  // pg_tables, not information_schema.tables: the same tables (ordinary and partitioned), read from the catalog without the standard view's privilege checks.
  const tables = (await pg.pool.query<{ s: string; t: string }>("select schemaname as s, tablename as t from pg_tables where schemaname not in ('pg_catalog', 'information_schema') order by 1, 2")).rows;
  // Names read from the catalog, quoted as identifiers.
  const q = (n: string) => `"${n.replaceAll('"', '""')}"`;
  const counts = (await pg.pool.query<{ k: string; n: number }>(tables.map(({ s, t }, i) => `select ${i} as i, '${`${s}.${t}`.replaceAll("'", "''")}' as k, count(*)::int as n from ${q(s)}.${q(t)}`).join(" union all ") + " order by i")).rows;
  return [...counts.map((c) => `${c.k}=${c.n}`), fs.readdirSync(dataDir).sort().join(",")].join(" ");
}
