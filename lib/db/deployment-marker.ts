import fs from "node:fs";
import path from "node:path";
import { ConfigError, getConfig } from "../config";
import { PRIVATE_FILE_MODE } from "../private-fs";

/**
 * With DATABASE_URL every replica keeps its state in PostgreSQL and nothing
 * of its own in DATA_DIR. This small file records that the data dir belongs
 * to such a deployment, so a replica restarted without the variable refuses
 * to start instead of serving new, empty SQLite stores and acknowledging
 * writes PostgreSQL never sees.
 */
export const POSTGRES_MARKER_FILE = "postgresql-deployment.json";

function markerPath(): string {
  return path.join(getConfig().dataDir, POSTGRES_MARKER_FILE);
}

/** Record (once) that this data dir belongs to a PostgreSQL deployment. */
export function markPostgresDataDir(): void {
  const file = markerPath();
  if (fs.existsSync(file)) return;
  const note = { backend: "postgresql", markedAt: new Date().toISOString(), meaning: "this DATA_DIR belongs to a deployment whose data is in PostgreSQL (DATABASE_URL); dualmind refuses to start on it without DATABASE_URL" };
  try {
    fs.writeFileSync(file, JSON.stringify(note, null, 2) + "\n", { mode: PRIVATE_FILE_MODE, flag: "wx" });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
}

/**
 * Refuse local SQLite data on a data dir marked as a PostgreSQL deployment's
 * (a ConfigError naming DATABASE_URL). Checked at start-up and before any
 * SQLite database is opened or created.
 */
export function assertSqliteDataDir(): void {
  if (getConfig().databaseUrl) return;
  if (!fs.existsSync(markerPath())) return;
  throw new ConfigError([
    {
      variable: "DATABASE_URL",
      message: `is not set, but DATA_DIR ${getConfig().dataDir} belongs to a PostgreSQL deployment (${POSTGRES_MARKER_FILE}); set DATABASE_URL to that database. To run this data dir on SQLite instead, move the data back first (pg_dump, memories export) and delete ${POSTGRES_MARKER_FILE}`,
    },
  ]);
}
