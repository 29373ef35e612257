import fs from "node:fs";
import path from "node:path";
import { getGovernance, getStoreDb } from "@/lib/db/connection";

/** Row counts of every table in governance.db and the given stores, plus the store directories: "nothing written" means this does not change. */
export function snapshotDatabases({ dataDir, stores }: { dataDir: string; stores: string[] }): string {
  const parts: string[] = [];
  for (const db of [getGovernance().sqlite, ...stores.map((s) => getStoreDb(s).sqlite)]) {
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
