import { randomBytes } from "node:crypto";
import { Client } from "pg";
import { inject } from "vitest";

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
