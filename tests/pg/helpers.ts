import { randomBytes } from "node:crypto";
import { Client } from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";

/**
 * A new, empty database on the suite's server, so test files never see each other's rows;
 * with `template` (the URL of another test database, no one connected to it), a copy of that one;
 * `migrated`: a copy of the run's database that has every governance migration and nothing else
 * (tests/pg/global-setup.ts), which start-up then finds migrated.
 */
export async function createTestDatabase({ template, migrated = false }: { template?: string; migrated?: boolean } = {}): Promise<string> {
  const admin = new URL(inject("pgAdminUrl"));
  const name = `t_${randomBytes(6).toString("hex")}`;
  template ??= migrated ? inject("pgMigratedTemplate") : undefined;
  const from = template ? new URL(template).pathname.slice(1) : undefined;
  if (from !== undefined && !/^t_[0-9a-f]{12}$/.test(from)) throw new Error(`not a test database: ${template}`);
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    // `name` and `from` are test database names (hex digits only, checked above), so they are safe as identifiers.
    await client.query(from ? `create database ${name} template ${from}` : `create database ${name}`);
  } finally {
    await client.end();
  }
  admin.pathname = `/${name}`;
  return admin.toString();
}

/**
 * Two app replicas (separate pools) on one fresh database for the whole file,
 * as two servers behind a load balancer would be. Read them inside tests.
 */
export function useTwoReplicas({ max = 5 }: { max?: number } = {}): { a: () => PgHandle; b: () => PgHandle } {
  let a: PgHandle;
  let b: PgHandle;
  beforeAll(async () => {
    const url = await createTestDatabase();
    a = await openPgHandle({ url, max });
    b = await openPgHandle({ url, max });
  });
  afterAll(async () => {
    await closePgHandle(a);
    await closePgHandle(b);
  });
  return { a: () => a, b: () => b };
}

/** A session of its own on `url`, outside any app pool and its limits (another replica, an admin's psql). */
export async function withClient<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** The error `p` rejects with (a test failure when it resolves). */
export async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a failure");
}
