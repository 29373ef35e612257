import { randomBytes } from "node:crypto";
import { Client } from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";

/** A new, empty database on the suite's server, so test files never see each other's rows. */
export async function createTestDatabase(): Promise<string> {
  const admin = new URL(inject("pgAdminUrl"));
  const name = `t_${randomBytes(6).toString("hex")}`;
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    // `name` is generated above from hex digits only, so it is safe as an identifier.
    await client.query(`create database ${name}`);
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
