import { getGovernance } from "./connection";
import { getPg, type PgHandle } from "./pg";
import type { AnyStoreHandle, LedgerHandle } from "./port";

/**
 * The composition root's one choice: which database this process runs on.
 * Embedded SQLite (governance.db and a file per store in DATA_DIR) without
 * DATABASE_URL, else PostgreSQL on the process's pool (migrated on first use).
 * Every backend (governance(), stores(), graphBackend(), recallBackend(),
 * embeddingsBackend(), metricsBackend()) is built once per engine by
 * perEngine from one builder that takes the engine, so no operation asks
 * which database it is on; only the engine modules (lib/<area>/engines/) differ.
 */
export type Engine = { kind: "sqlite" } | { kind: "pg"; pg: Promise<PgHandle> };

export const SQLITE_ENGINE: Engine = { kind: "sqlite" };

const pgEngines = new WeakMap<Promise<PgHandle>, Engine>();

/** The PostgreSQL engine over one pool (tests build one per replica); the same object for the same pool. */
export function pgEngine(pg: Promise<PgHandle> | PgHandle): Engine {
  const promise = pg instanceof Promise ? pg : Promise.resolve(pg);
  let found = pgEngines.get(promise);
  if (!found) {
    found = { kind: "pg", pg: promise };
    pgEngines.set(promise, found);
  }
  return found;
}

/** This process's engine: PostgreSQL when DATABASE_URL is set (a new pool after closePg is a new engine), else SQLite. */
export function currentEngine(): Engine {
  const pg = getPg();
  return pg ? pgEngine(pg) : SQLITE_ENGINE;
}

/** This process's ledger: PostgreSQL with DATABASE_URL, else governance.db. */
export async function processLedger(): Promise<LedgerHandle> {
  return (await getPg()) ?? getGovernance();
}

/** A backend of this process: `build` run once per engine, so a new pool after closePg gets a new one. */
export function perEngine<T extends object>(build: (engine: Engine) => T): () => T {
  const built = new WeakMap<Engine, T>();
  return () => {
    const engine = currentEngine();
    let found = built.get(engine);
    if (!found) {
      found = build(engine);
      built.set(engine, found);
    }
    return found;
  };
}

/**
 * Store repositories' operations served by store name, as the backends expose
 * them: the store opened by `open` (404 when unknown), then the operation on its handle.
 */
export function byStore(open: (store: string) => Promise<AnyStoreHandle>) {
  return <A extends { handle: AnyStoreHandle }, R>(op: (a: A) => R) =>
    async ({ store, ...a }: Omit<A, "handle"> & { store: string }): Promise<Awaited<R>> => await op({ ...a, handle: await open(store) } as unknown as A);
}
