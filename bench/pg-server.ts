import { Client } from "pg";
import { startTestPostgres, type TestPostgres } from "../tests/pg/harness";

/**
 * The PostgreSQL a bench runs against: BENCH_PG_URL when set, else a
 * throwaway cluster started as the test suite starts one (on BENCH_PG_PORT
 * when set, else a free port), with a fresh database `name` in it. Null (and
 * a "skipped" line) when neither is there. `keepDir`: the cluster lives there
 * and keeps its databases between runs (BENCH_PG_KEEP).
 */
export async function benchPostgres(name: string, { keepDir }: { keepDir?: string } = {}): Promise<{ url: string; server: TestPostgres | null } | null> {
  if (process.env.BENCH_PG_URL) return { url: process.env.BENCH_PG_URL, server: null };
  let server: TestPostgres;
  try {
    server = await startTestPostgres({ port: process.env.BENCH_PG_PORT ? Number(process.env.BENCH_PG_PORT) : undefined, keepDir });
  } catch (e) {
    process.stdout.write(`skipped: no PostgreSQL server (${e instanceof Error ? e.message.split("\n")[0] : String(e)}); set BENCH_PG_URL\n`);
    return null;
  }
  const admin = new Client({ connectionString: server.url });
  await admin.connect();
  // `name` is a constant of the calling bench, never input.
  const exists = (await admin.query("select 1 from pg_database where datname = $1", [name])).rowCount;
  if (!exists) await admin.query(`create database ${name}`);
  await admin.end();
  return { url: server.url.replace(/\/postgres$/, `/${name}`), server };
}
