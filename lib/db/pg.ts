import { INSTALL_ROOT } from "../install-root";
import fs from "node:fs";
import path from "node:path";
import { sql } from "drizzle-orm";
import { drizzle, type NodePgDatabase, type NodePgQueryResultHKT } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import type { PgDatabase } from "drizzle-orm/pg-core";
import { Pool } from "pg";
import { getConfig, type PgTimeouts } from "../config";
import { log } from "../log";
import * as pgGovernanceSchema from "./schema/pg/governance";

/**
 * The PostgreSQL backend (DATABASE_URL): a pool per process, the governance
 * migrations applied under an advisory lock. node-postgres: pure JS, an
 * explicit pool, and client checkout, which session-level advisory locks need.
 */
export type PgGovernanceDb = NodePgDatabase<typeof pgGovernanceSchema>;
/** The database or an open transaction (a transaction nests as a savepoint). */
export type PgGovernanceExecutor = PgDatabase<NodePgQueryResultHKT, typeof pgGovernanceSchema>;
export type PgHandle = { kind: "pg"; url: string; pool: Pool; db: PgGovernanceDb };

/**
 * Advisory lock keys (one bigint space per database, shared with anything
 * else using advisory locks there): "dm" in the high bytes keeps them apart.
 */
export const PG_LOCK = {
  migrate: 0x646d_0000_0001n,
  auditChain: 0x646d_0000_0002n,
  /** Token creation: the label numbering ("x (2)") reads the active labels, then inserts. */
  tokenLabels: 0x646d_0000_0003n,
  /** Sign-in gate and settle: attempts on every replica take turns, as under SQLite's write lock. */
  loginThrottle: 0x646d_0000_0004n,
  /** User changes that check the admins left (last admin) or a free name. */
  users: 0x646d_0000_0005n,
  /** Dialectic restores: each checks which sessions exist, then inserts the rest. */
  dialecticRestore: 0x646d_0000_0006n,
  /** Request-latency flushes: replicas add their minutes to the shared rows one at a time. */
  metrics: 0x646d_0000_0007n,
} as const;

const MIGRATIONS_FOLDER = path.join(INSTALL_ROOT, "drizzle", "pg", "governance");

/**
 * Pool limits: `max` connections per process; waiting longer than 10 s for
 * one is an error, not a hang. Every connection starts with the session limits
 * of docs/postgresql.md ("Session limits"), each answered 503
 * (lib/errors.ts infrastructureError).
 */
export function openPgPool({
  url,
  max,
  connectionTimeoutMs = 10_000,
  timeouts = getConfig().pgTimeouts,
}: {
  url: string;
  max: number;
  connectionTimeoutMs?: number;
  timeouts?: PgTimeouts;
}): Pool {
  const pool = new Pool({
    connectionString: url,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: connectionTimeoutMs,
    statement_timeout: timeouts.statementMs || undefined,
    lock_timeout: timeouts.lockMs || undefined,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionMs || undefined,
    // Recycled hourly, so a fail-over or a pgbouncer restart does not pin dead sessions.
    maxLifetimeSeconds: 3600,
    application_name: "dualmind",
  });
  // A connection lost while idle in the pool (server restart, fail-over) must not crash the process; the pool drops it.
  pool.on("error", (e) => log("warn", "postgres: idle connection lost", { reason: e.message }));
  // Nor one lost while checked out between two queries of a transaction: node-postgres emits that on the
  // client, where no listener means an uncaught exception; the next query on it fails and is answered 503.
  pool.on("connect", (client) => client.on("error", (e) => log("warn", "postgres: connection lost", { reason: e.message })));
  return pool;
}

function lastMigrationTag(): string {
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as { entries: { tag: string }[] };
  return journal.entries.at(-1)?.tag ?? "none";
}

/**
 * Apply drizzle/pg/governance. Replicas starting together queue on an advisory
 * lock, so exactly one applies each migration and the others find it done.
 */
export async function migratePg(pool: Pool): Promise<{ schemaVersion: string }> {
  const client = await pool.connect();
  try {
    // Queue behind another replica's migration, and let a long one finish (reset to the pool's limits below).
    await client.query("set statement_timeout = 0; set lock_timeout = 0");
    await client.query("select pg_advisory_lock($1)", [PG_LOCK.migrate]);
    try {
      const db = drizzle(client, { schema: pgGovernanceSchema });
      await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER, migrationsSchema: "drizzle", migrationsTable: "governance_migrations" });
      const schemaVersion = lastMigrationTag();
      await db.execute(sql`insert into meta (key, value) values ('schema_version', ${schemaVersion})
        on conflict (key) do update set value = excluded.value`);
      await db.execute(sql`insert into meta (key, value) values ('created_at', ${String(Date.now())}) on conflict (key) do nothing`);
      return { schemaVersion };
    } finally {
      await client.query("select pg_advisory_unlock($1)", [PG_LOCK.migrate]);
      await client.query("reset statement_timeout; reset lock_timeout");
    }
  } finally {
    client.release();
  }
}

/** Open a pool on `url` and migrate it. The caller owns the handle (closePgHandle). */
export async function openPgHandle({ url, max, timeouts, connectionTimeoutMs }: { url: string; max: number; timeouts?: PgTimeouts; connectionTimeoutMs?: number }): Promise<PgHandle> {
  const pool = openPgPool({ url, max, timeouts, connectionTimeoutMs });
  try {
    await migratePg(pool);
  } catch (e) {
    await pool.end();
    throw e;
  }
  return { kind: "pg", url, pool, db: drizzle(pool, { schema: pgGovernanceSchema }) };
}

export async function closePgHandle(handle: PgHandle): Promise<void> {
  await handle.pool.end();
}

// Kept on globalThis so Next dev reloads reuse the pool instead of leaking connections.
const g = globalThis as unknown as { __dualmindPg?: { url: string; handle: Promise<PgHandle> } };

/** The process's PostgreSQL handle for DATABASE_URL (migrated on first use); undefined when DATABASE_URL is unset. */
export function getPg(): Promise<PgHandle> | undefined {
  const { databaseUrl, pgPoolMax } = getConfig();
  if (!databaseUrl) return undefined;
  if (g.__dualmindPg?.url !== databaseUrl) {
    const previous = g.__dualmindPg;
    const handle = openPgHandle({ url: databaseUrl, max: pgPoolMax });
    // A failed open is not cached: the next call tries again.
    handle.catch(() => {
      if (g.__dualmindPg?.handle === handle) g.__dualmindPg = undefined;
    });
    g.__dualmindPg = { url: databaseUrl, handle };
    if (previous) void previous.handle.then(closePgHandle, () => undefined);
  }
  return g.__dualmindPg.handle;
}

export async function closePg(): Promise<void> {
  const current = g.__dualmindPg;
  g.__dualmindPg = undefined;
  if (current) await current.handle.then(closePgHandle, () => undefined);
}

