import type Database from "better-sqlite3";
import { sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { getConfig } from "../config";
import { getGovernance } from "./connection";
import { getPg, type PgGovernanceExecutor, type PgHandle } from "./pg";
import { AppError } from "../errors";
import { dialect, sqlRows, sqlRun, type Op } from "./port";

/**
 * A store's lifecycle (created, archived, unarchived, deleted) is read from
 * the audit log, the same rows on both backends: the last lifecycle row of
 * `store:<name>` says whether the store is archived. The log is append-only
 * and hash-chained (never pruned), its (target, id) index answers one store
 * in one short backward walk, and no second record can disagree with it.
 */
export const LIFECYCLE_ACTIONS = ["store.create", "store.delete", "store.archive", "store.unarchive"] as const;

/**
 * The actions as SQL literals, written as the partial index audit_log_store_lifecycle_idx
 * (governance migrations) spells its WHERE: a query names the same list, so both databases read
 * that index (a bound parameter could not prove the match).
 */
const LIFECYCLE_IN = `action in (${LIFECYCLE_ACTIONS.map((a) => `'${a}'`).join(", ")})`;

export const LAST_LIFECYCLE_SQL = `select action from audit_log where target = ? and ${LIFECYCLE_IN} order by id desc limit 1`;

const targetOf = (store: string) => `store:${store}`;

/** Whether a SQLite store is archived (one indexed read of governance.db). */
export function isStoreArchived(store: string): boolean {
  const { sqlite } = getGovernance();
  let statement = lastLifecycleStatements.get(sqlite);
  if (!statement) lastLifecycleStatements.set(sqlite, (statement = sqlite.prepare(LAST_LIFECYCLE_SQL).pluck()));
  return statement.get(targetOf(store)) === "store.archive";
}

/** Prepared once per governance connection: background loops ask for every store each round. */
const lastLifecycleStatements = new WeakMap<Database.Database, Database.Statement>();

/** The archived ones among `stores`, on PostgreSQL. */
export async function archivedStoresPg({ db, stores }: { db: PgGovernanceExecutor; stores: readonly string[] }): Promise<Set<string>> {
  if (stores.length === 0) return new Set();
  // One round trip for every store: each store's last lifecycle row, read off the (target, id) index.
  const targets = sql.join([...new Set(stores)].map((s) => sql`${targetOf(s)}`), sql`, `);
  const rows = (
    await db.execute(sql`select target, action from audit_log where id in (select max(id) from audit_log where target in (${targets}) and ${sql.raw(LIFECYCLE_IN)} group by target)`)
  ).rows as { target: string; action: string }[];
  return new Set(rows.filter((r) => r.action === "store.archive").map((r) => r.target.slice("store:".length)));
}

/**
 * A SQL condition: the store named by `storeColumn` (a column of the outer query) is not archived.
 * Its last lifecycle row read off the same (target, id) index, inside the caller's statement
 * (a claim with FOR UPDATE SKIP LOCKED can leave an archived store's rows out without a second round trip).
 */
export function storeNotArchivedSql(storeColumn: SQLWrapper): SQL {
  return sql`coalesce((select lc.action from audit_log lc where lc.target = 'store:' || ${storeColumn} and lc.${sql.raw(LIFECYCLE_IN)} order by lc.id desc limit 1), '') <> 'store.archive'`;
}

/** The store's last lifecycle action on PostgreSQL (inside a caller's transaction when `db` is one). */
export async function lastLifecycleActionPg({ db, store }: { db: PgGovernanceExecutor; store: string }): Promise<string | undefined> {
  const r = await db.execute(sql`select action from audit_log where target = ${targetOf(store)} and ${sql.raw(LIFECYCLE_IN)} order by id desc limit 1`);
  return (r.rows[0] as { action?: string } | undefined)?.action;
}

/** The archived ones among `stores`, on this process's backend. */
export async function archivedStores(stores: readonly string[]): Promise<Set<string>> {
  if (stores.length === 0) return new Set();
  const pg = getConfig().databaseUrl ? getPg() : undefined;
  if (pg) return archivedStoresPg({ db: (await pg).db, stores });
  return new Set(stores.filter((s) => isStoreArchived(s)));
}

/** The refusal of a write to an archived store: 409 `store_archived`, naming the store and how to write again. */
export function storeArchivedError(store: string): AppError {
  return new AppError("store_archived", `store ${store} is archived: it is read-only until an admin unarchives it (POST /api/v1/stores/${store}/unarchive)`, [{ path: "store", message: "archived", store }]);
}

/** Refuse a write that names an archived store (every store a request or tool call names: see lib/api/store-refs.ts). */
export async function assertStoresWritable(stores: Iterable<string>): Promise<void> {
  const archived = await archivedStores([...new Set(stores)]);
  const first = [...archived][0];
  if (first) throw storeArchivedError(first);
}

/** The stores background work keeps up (embedding, memory watch, metrics, job sweeps): archived ones are left closed. */
export function activeStoreNames(names: readonly string[]): string[] {
  return names.filter((s) => !isStoreArchived(s));
}

export async function activeStoreNamesPg({ pg, names }: { pg: PgHandle; names: readonly string[] }): Promise<string[]> {
  const archived = await archivedStoresPg({ db: pg.db, stores: names });
  return names.filter((s) => !archived.has(s));
}

/**
 * Token allow-lists name stores by name, and a name can be used again after
 * its store is deleted. So deleting a store takes its name out of every
 * allow-list, in the delete's own transaction: a token allowed the old store
 * never reaches a new store of that name. A list left empty allows no store
 * (null is "every store"; an empty list is not null).
 */

type AllowListRow = { id: number | string; stores: string };

/**
 * What the ledger keeps about a store that goes with it: its name in allow-lists (above), and its self-recall probe
 * sets (they quote its content), runs and evaluation jobs, so a store made later under the same name starts with none
 * of them. Inside the delete's ledger transaction, on either ledger; answers how many allow-lists changed.
 */
export function* forgetDeletedStoreOp(store: string): Op<number> {
  const lock = (yield* dialect()) === "pg" ? sql` for update` : sql``;
  const rows = yield* sqlRows<AllowListRow>(sql`select id, stores from api_tokens where stores like ${`%"${store}"%`}${lock}`);
  // Rows whose `like` match was another name are left as they are.
  const changed = rows.filter((r) => (JSON.parse(r.stores) as string[]).includes(store));
  for (const r of changed) yield* sqlRun(sql`update api_tokens set stores = ${JSON.stringify((JSON.parse(r.stores) as string[]).filter((s) => s !== store))} where id = ${r.id}`);
  for (const table of ["self_recall_runs", "self_recall_probe_sets"]) yield* sqlRun(sql`delete from ${sql.identifier(table)} where store = ${store}`);
  yield* sqlRun(sql`delete from admin_jobs where store = ${store} and kind = 'evaluate'`);
  return changed.length;
}

/**
 * A backend whose `writes` refuse (409 store_archived) while the store they
 * name is archived: the rule in the domain, so every surface that calls it —
 * REST, MCP, dashboard actions, CLI — gets the same answer.
 */
export function refusingArchivedWrites<B extends object>({ backend, writes }: { backend: B; writes: readonly (keyof B & string)[] }): B {
  const guarded = { ...backend } as Record<string, unknown>;
  for (const name of writes) {
    const write = backend[name] as unknown as (a: { store: string }) => Promise<unknown>;
    guarded[name] = async (a: { store: string }) => {
      await assertStoresWritable([a.store]);
      return write(a);
    };
  }
  return guarded as B;
}
