import { it } from "vitest";
import type { z } from "zod";
import type { createTokenSchema } from "@/lib/auth/tokens";
import { governance } from "@/lib/backend/governance";
import { bootstrapApp } from "@/lib/bootstrap";
import { closeAllDatabases, getGovernance, getStoreDb } from "@/lib/db/connection";
import { quoteIdent, storeSchemaName } from "@/lib/db/pg-store";
import { searchInputSchema } from "@/lib/index/search";
import { closePg, getPg } from "@/lib/db/pg";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { getEmbeddingStatus, type EmbeddingStatus } from "@/lib/embed/status";
import { drainEmbedQueues, processEmbedBatch, type BatchResult } from "@/lib/embed/worker";
import { getEmbeddingStatusPgByName } from "@/lib/metrics/engines/pg";
import { drainEmbedQueuesPg, processEmbedBatchPg } from "@/lib/index/embed-queue-pg";
import type { TraceInput } from "@/lib/recall/descriptors";
import { recallBackend } from "@/lib/recall/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { graphBackend } from "@/lib/graph/backend";
import type { ThinkInput } from "@/lib/graph/thoughts";
import { stores } from "@/lib/stores/backend";
import { useTempDataDir } from "./helpers";
import { createTestDatabase } from "./pg/helpers";

/**
 * The backend fixture: one suite, two backends. `npm run test:unit` runs a
 * suite on embedded SQLite; `npm run test:pg` runs the same file with
 * DM_TEST_BACKEND=pg (vitest.pg.config.ts, files listed in
 * tests/pg/both-backends.ts), where each temp data dir also gets a fresh
 * PostgreSQL database as DATABASE_URL. Setup goes through the backends
 * (stores(), governance(), graphBackend()), never through one dialect's
 * functions, so the same lines seed either.
 */
export type TestBackend = "sqlite" | "pg";
export const testBackend: TestBackend = process.env.DM_TEST_BACKEND === "pg" ? "pg" : "sqlite";
export const onPg = testBackend === "pg";

/**
 * A test that checks what only the SQLite backend has (index.db files, the
 * memory folder, SQLite pragmas): skipped on PostgreSQL, and the skip names
 * why, so it shows in the run's skipped count, never silently.
 */
export function itSqliteOnly(name: string, why: string, fn: () => unknown, timeout?: number): void {
  it.runIf(!onPg)(`${name} [SQLite only: ${why}]`, fn, timeout);
}

/**
 * A test that fails on PostgreSQL because the product differs there (a
 * finding not fixed yet): `it.fails` on PostgreSQL, so it turns red the day
 * it passes, and an ordinary test on SQLite. The reason is in its name.
 */
export function itFailsOnPg(name: string, why: string, fn: () => unknown, timeout?: number): void {
  if (onPg) it.fails(`${name} [expected to fail on PostgreSQL: ${why}]`, fn, timeout);
  else it(name, fn, timeout);
}

/**
 * Assertions inside a test that read what only SQLite has (a SQLite-only
 * domain function, index.db rows): run on SQLite; on PostgreSQL the run
 * prints what it left out, so no check is dropped silently.
 */
export async function sqliteOnlyCheck(why: string, fn: () => unknown): Promise<void> {
  if (onPg) console.info(`[SQLite only, not checked on PostgreSQL] ${why}`);
  else await fn();
}

export type TestEnv = { dataDir: string; backend: TestBackend; databaseUrl: string | undefined; cleanup: () => Promise<void> };

/**
 * What a file's tests all start from beyond start-up (stores, documents, tokens): a function of the file's, run
 * after start-up with a fresh embedder, whose answer (tokens' secrets, ids) the test gets as `seeded`. It must
 * write the same rows every time it runs and read nothing a test changes: on PostgreSQL it runs once per
 * process and start-up env, in the template the tests' databases are copied from (see freshDatabase).
 */
export type Seed<T> = () => Promise<T>;

/**
 * A fresh temp DATA_DIR (tests/helpers.ts useTempDataDir) and, on
 * PostgreSQL, a fresh database as DATABASE_URL; then the app's start-up
 * (bootstrapApp: core and default stores, the first admin) unless
 * `bootstrap: false` (with `migrated: true`, a PostgreSQL database that has
 * the migrations, for a test about anything but them), and `seed` (see Seed).
 * Cleanup closes the process's pool before the env goes, so files do not leak connections.
 */
export async function useTestBackend<T = undefined>(
  extraEnv: Record<string, string> = {},
  { bootstrap = true, migrated = false, seed }: { bootstrap?: boolean; migrated?: boolean; seed?: Seed<T> } = {},
): Promise<TestEnv & { seeded: T }> {
  if (seed && !bootstrap) throw new Error("a seed runs after start-up: it needs bootstrap");
  const fresh = onPg ? await freshDatabase(extraEnv, bootstrap, migrated, seed) : undefined;
  const databaseUrl = fresh?.url;
  const env = useTempDataDir({ ...baseEnv(databaseUrl), ...extraEnv });
  const cleanup = async () => {
    await closePg();
    env.cleanup();
  };
  let seeded = fresh?.seeded as T;
  if (bootstrap) {
    try {
      await bootstrapApp();
      if (seed) {
        resetEmbedderForTests();
        // On PostgreSQL the copy holds what the seed wrote.
        if (!onPg) seeded = await seed();
      }
    } catch (e) {
      await cleanup();
      throw e;
    }
  }
  return { dataDir: env.dataDir, backend: testBackend, databaseUrl, cleanup, seeded };
}

function baseEnv(databaseUrl: string | undefined): Record<string, string> {
  // A small pool per file: files run in parallel on one test server.
  return { DUALMIND_CHECK_RESPONSES: "true", ...(databaseUrl ? { DATABASE_URL: databaseUrl, DUALMIND_PG_POOL_MAX: "4" } : {}) };
}

type Template = { url: string; seeded: unknown };
/**
 * Per test process, start-up env and seed: a database that start-up (migrations, core, default, first admin) and
 * the seed already ran on. A seed is told apart by its identity: a file's seed function is one per file.
 */
const startedTemplates = new Map<string, Promise<Template>>();
const seedIds = new WeakMap<Seed<unknown>, number>();
let seedCount = 0;

/**
 * A fresh PostgreSQL database. With start-up to run, a copy of a template
 * that start-up and the seed ran on once for this env (CREATE DATABASE … TEMPLATE):
 * a suite that wants a clean database per test then pays for the migrations,
 * its stores' DDL and its seed rows once, not per test. Start-up still runs on the copy and finds it done.
 */
async function freshDatabase<T>(extraEnv: Record<string, string>, bootstrap: boolean, migrated: boolean, seed: Seed<T> | undefined): Promise<{ url: string; seeded: unknown }> {
  if (!bootstrap) return { url: await createTestDatabase({ migrated }), seeded: undefined };
  let seedId = 0;
  if (seed) {
    seedId = seedIds.get(seed) ?? ++seedCount;
    seedIds.set(seed, seedId);
  }
  const key = JSON.stringify([extraEnv, seedId]);
  let template = startedTemplates.get(key);
  if (!template) {
    template = (async () => {
      const url = await createTestDatabase({ migrated: true });
      const env = useTempDataDir({ ...baseEnv(url), ...extraEnv });
      let seeded: unknown;
      try {
        await bootstrapApp();
        if (seed) {
          resetEmbedderForTests();
          seeded = await seed();
        }
      } finally {
        // No session may stay on a template while it is copied.
        await closePg();
        env.cleanup();
      }
      return { url, seeded };
    })();
    startedTemplates.set(key, template);
  }
  const { url, seeded } = await template;
  return { url: await createTestDatabase({ template: url }), seeded };
}

/** A store, created the way POST /stores does, on this backend. */
export async function seedStore(name: string, description?: string): Promise<void> {
  await stores().createStore({ input: { name, description }, actor: "test" });
}

/** An agent token (the secret is returned once), on this backend. */
export async function seedToken(input: z.input<typeof createTokenSchema>): Promise<string> {
  return (await governance().createApiToken({ input, actor: "test" })).token;
}

/** Agent tokens, one for each key, made in the keys' order: the secrets under the same keys. */
export async function seedTokens<K extends string>(specs: Record<K, z.input<typeof createTokenSchema>>): Promise<Record<K, string>> {
  const secrets = {} as Record<K, string>;
  for (const [key, spec] of Object.entries(specs) as [K, z.input<typeof createTokenSchema>][]) secrets[key] = await seedToken(spec);
  return secrets;
}

/** The principal a bearer token stands for (what the route wrapper and the MCP endpoint see). */
export async function principalOf(token: string) {
  const p = await governance().verifyApiToken({ token });
  if (!p) throw new Error("unknown or revoked token");
  return p;
}

/** A document, ingested as PUT /documents does. */
export async function seedDocument(store: string, path: string, content: string): Promise<void> {
  await stores().putDocuments({ store, input: { path, content }, actor: "test" });
}

/** A thought, as POST /thoughts does. */
export async function seedThought(store: string, input: ThinkInput, actor = "seed") {
  return graphBackend().think({ store, input, actor });
}

/**
 * Raw SQL on this backend's governance ledger, for what no API offers (row
 * counts across tables, a row in a given state). Write it in the SQL both
 * dialects share; `?` placeholders on both.
 */
export async function governanceSql<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
  const pg = getPg();
  if (pg) {
    let n = 0;
    return (await (await pg).pool.query(text.replace(/\?/g, () => `$${++n}`), params)).rows as T[];
  }
  const stmt = getGovernance().sqlite.prepare(text);
  if (stmt.reader) return stmt.all(...params) as T[];
  stmt.run(...params);
  return [];
}

/** What the ledger really takes: governance.db's used pages, or the ledger tables' total size (indexes and TOAST included) on PostgreSQL. */
export async function ledgerOnDisk(): Promise<number> {
  if (!onPg) {
    const db = getGovernance().sqlite;
    return (Number(db.pragma("page_count", { simple: true })) - Number(db.pragma("freelist_count", { simple: true }))) * Number(db.pragma("page_size", { simple: true }));
  }
  const [r] = await governanceSql<{ n: unknown }>("select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as n from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind = 'r'");
  return Number(r.n);
}

/** A reasoning trace, as POST /traces does. */
export async function seedTrace(store: string, input: TraceInput, agentId = "seed") {
  return recallBackend().recordTrace({ store, agentId, input });
}

/** Run the embed worker until the stores' queues hold no ready work (the server's worker is off in tests). */
export async function drainEmbeddings(storeNames: string[]): Promise<void> {
  const pg = getPg();
  if (!pg) {
    await drainEmbedQueues({ stores: storeNames });
    return;
  }
  const handle = await pg;
  await drainEmbedQueuesPg({ handles: await Promise.all(storeNames.map((store) => openStorePg({ pg: handle, store }))) });
}


/**
 * Go on as another app server of the same install, until the returned
 * function brings this one back. On SQLite that is a second process on the
 * same DATA_DIR (the connections are reopened); on PostgreSQL it is another
 * machine: its own empty DATA_DIR, the same DATABASE_URL. What one server
 * recorded and the other cannot see is a difference a user of N replicas
 * meets (one replica's history on a page that claims the install's).
 */
export function asAnotherReplica(): () => void {
  if (!onPg) {
    closeAllDatabases();
    return () => closeAllDatabases();
  }
  const other = useTempDataDir({ DATABASE_URL: process.env.DATABASE_URL ?? "", DUALMIND_PG_POOL_MAX: process.env.DUALMIND_PG_POOL_MAX ?? "4" });
  return () => other.cleanup();
}

/**
 * Raw SQL on one store's index, for what no API offers (a document's chunk
 * ids in order, a row count): the store's index.db on SQLite, its schema on
 * PostgreSQL. Write it in the SQL both dialects share, `?` placeholders;
 * PostgreSQL answers bigint and count(*) as strings, so cast (`::int` is
 * not SQLite: use `cast(x as integer)`, which both read).
 */
export async function storeSql<T = Record<string, unknown>>(store: string, text: string, params: unknown[] = []): Promise<T[]> {
  const pg = getPg();
  if (pg) {
    const client = await (await pg).pool.connect();
    try {
      await client.query("begin");
      // A seed statement is the test's setup, not a request: the pool's statement_timeout (a server limit) does not bound it.
      await client.query("select set_config('search_path', $1, true), set_config('statement_timeout', '0', true)", [`${quoteIdent(storeSchemaName(store))}, public`]);
      let n = 0;
      const rows = (await client.query(text.replace(/\?/g, () => `$${++n}`), params)).rows as T[];
      await client.query("commit");
      return rows;
    } catch (e) {
      await client.query("rollback");
      throw e;
    } finally {
      client.release();
    }
  }
  const stmt = getStoreDb({ store }).sqlite.prepare(text);
  if (stmt.reader) return stmt.all(...params) as T[];
  stmt.run(...params);
  return [];
}

/** A document's chunks in order (ids, text and byte range), on this backend. */
export async function chunksOfDocument(store: string, docPath: string): Promise<{ chunkId: string; chunkIndex: number; text: string; startByte: number; endByte: number }[]> {
  return storeSql(
    store,
    `select c.chunk_id as "chunkId", c.chunk_index as "chunkIndex", c.text, c.start_byte as "startByte", c.end_byte as "endByte"
     from chunks c join documents d on d.doc_id = c.doc_id where d.path = ? order by c.chunk_index`,
    [docPath],
  );
}

/** A search as every entry point makes it (stores().search), the input parsed as the route parses it. */
export async function searchHere(store: string, body: Record<string, unknown>) {
  return stores().search({ store, input: searchInputSchema.parse(body) });
}

/** One embed worker step on a store (claim a batch, embed, finish), as the server's worker takes it. */
export async function embedOneBatch(store: string): Promise<BatchResult> {
  const pg = getPg();
  if (!pg) return processEmbedBatch({ handle: getStoreDb({ store }) });
  return processEmbedBatchPg({ handle: await openStorePg({ pg: await pg, store }) });
}

/** A store's embeddings status (backlog, parked items, degraded), as its health page reads it. */
export async function embeddingStatusOf(store: string): Promise<EmbeddingStatus> {
  return getPg() ? getEmbeddingStatusPgByName({ store }) : getEmbeddingStatus({ handle: getStoreDb({ store }) });
}

/** drainEmbeddings with the worker's batch limits, returning what it did (embedded, failed, batches) on either backend. */
export async function drainEmbeddingsWith(storeNames: string[], opts: { batchSize?: number; maxBatches?: number } = {}): Promise<{ embedded: number; failed: number; batches: number }> {
  const pg = getPg();
  if (!pg) return drainEmbedQueues({ stores: storeNames, ...opts });
  const handle = await pg;
  return drainEmbedQueuesPg({ handles: await Promise.all(storeNames.map((store) => openStorePg({ pg: handle, store }))), ...opts });
}
