import { INSTALL_ROOT } from "../install-root";
import type Database from "better-sqlite3";
import fs from "node:fs";
import path from "node:path";
import { getConfig } from "../config";
import { AppError, dbErrorCode } from "../errors";
import { log } from "../log";
import { sql } from "drizzle-orm";
import { quoteIdent, type SqlRunner } from "./pg-store";
import { withinWorkScope, workScope } from "./work-scope";

/**
 * A time budget for user-driven queries (search, recall, remember, list `q`).
 * better-sqlite3 is synchronous and cannot stop a statement, so one slow
 * statement would block every request: native/query_budget.c arms a
 * per-connection watchdog that calls sqlite3_interrupt() at the deadline
 * (also inside FTS5's prefix expansion); the statement fails with
 * SQLITE_INTERRUPT (422 query_too_expensive) and the connection stays usable.
 * Without the compiled extension queries run unbounded in time and only each
 * path's structural limits bound them; a warning says so once.
 */
export const QUERY_BUDGET_EXTENSION = path.join(INSTALL_ROOT, "native", "build", "query_budget.so");

export type QueryBudgetStatus = { available: true } | { available: false; reason: string };

type Armed = { arm: Database.Statement; disarm: Database.Statement };
// On globalThis, like the connection registry: Next bundles this module into
// several route chunks, and a connection opened through one chunk's copy must
// be found by another's.
const g = globalThis as unknown as { __dualmindQueryBudget?: { connections: WeakMap<Database.Database, Armed>; warned: boolean } };
g.__dualmindQueryBudget ??= { connections: new WeakMap(), warned: false };
const state = g.__dualmindQueryBudget;
const budgets = state.connections;

/** Load the extension on a connection; failure is logged once, never fatal. */
export function loadQueryBudget({ sqlite, file = QUERY_BUDGET_EXTENSION }: { sqlite: Database.Database; file?: string }): QueryBudgetStatus {
  let reason: string;
  if (!fs.existsSync(file)) {
    reason = `${file} is missing (run \`npm run build:native\`)`;
  } else {
    try {
      sqlite.loadExtension(file);
      budgets.set(sqlite, { arm: sqlite.prepare("select dualmind_budget_arm(?)"), disarm: sqlite.prepare("select dualmind_budget_disarm(?) as fired").pluck() });
      return { available: true };
    } catch (e) {
      reason = e instanceof Error ? e.message : String(e);
    }
  }
  if (!state.warned) {
    state.warned = true;
    log("warn", "query budget extension unavailable: slow queries cannot be interrupted, only structurally limited", { reason });
  }
  return { available: false, reason };
}

/** Per connection, the absolute deadlines of the runWithinBudget calls in progress, outermost first. */
const activeDeadlines = new WeakMap<Database.Database, number[]>();

/**
 * One request's budget: the time its budgeted statements may take in all.
 * Only time spent in them counts (waiting on an embedding provider does not
 * block the event loop), so a request of several statements still holds the
 * loop for at most the budget.
 */
export type QueryBudget = { budgetMs: number; remainingMs: number; hint: string };

/**
 * Run `fn` with one query budget for all the queries it starts: a batch of
 * calls gets the time one call would, not one budget per call.
 */
export function withSharedQueryBudget<T>({ fn, budgetMs = getConfig().queryBudgetMs }: { fn: () => T; budgetMs?: number }): T {
  // Time shared by every query of one request that runs several (an MCP JSON-RPC batch).
  return withinWorkScope({ part: { budget: { remainingMs: budgetMs } }, fn });
}

/** `hint` completes the error message: how the caller can narrow the query. */
export function startQueryBudget({ hint, budgetMs = getConfig().queryBudgetMs }: { hint: string; budgetMs?: number }): QueryBudget {
  const shared = workScope.getStore()?.budget;
  if (!shared) return { budgetMs, remainingMs: budgetMs, hint };
  // What this query spends is taken from the request's one pool (never more than its own budget would give).
  if (shared.remainingMs > budgetMs) shared.remainingMs = budgetMs;
  return {
    budgetMs,
    hint,
    get remainingMs() {
      return shared.remainingMs;
    },
    set remainingMs(v: number) {
      shared.remainingMs = v;
    },
  };
}

function tooExpensive(budget: QueryBudget): AppError {
  return new AppError("query_too_expensive", `the query did not finish within the ${budget.budgetMs} ms query budget (DUALMIND_QUERY_BUDGET_MS); ${budget.hint}`, [
    { path: "q", message: "query exceeded the time budget", budgetMs: budget.budgetMs },
  ]);
}

/**
 * Run `fn` within what is left of the budget. `fn` is synchronous and runs one
 * statement: the deadline must never stay armed across an await (it could
 * interrupt another request's statement on the shared connection), and the
 * watchdog fires once, so a deadline passing between two statements of one
 * `fn` would not stop the second.
 */
export function runWithinBudget<T>({ sqlite, budget, fn }: { sqlite: Database.Database; budget: QueryBudget; fn: () => T }): T {
  if (budget.remainingMs <= 0) throw tooExpensive(budget);
  const extension = budgets.get(sqlite);
  const started = performance.now();
  // Deadlines of the calls this one runs inside, on the same connection (a build slice inside a request's query):
  // when this one ends, the one around it is armed again rather than left without its interrupt.
  const outer = activeDeadlines.get(sqlite) ?? [];
  activeDeadlines.set(sqlite, outer);
  outer.push(started + budget.remainingMs);
  if (extension) extension.arm.run(Math.ceil(budget.remainingMs));
  let fired = false;
  try {
    return fn();
  } catch (e) {
    if ((e as { code?: unknown }).code === "SQLITE_INTERRUPT") {
      fired = true;
      throw tooExpensive(budget);
    }
    throw e;
  } finally {
    budget.remainingMs -= performance.now() - started;
    outer.pop();
    if (extension) {
      try {
        // One statement: disarm, and arm the call around this one again (0: there is none).
        const around = outer.at(-1);
        fired = extension.disarm.get(around === undefined ? 0 : Math.max(1, Math.ceil(around - performance.now()))) === 1 || fired;
      } catch {
        // A late interrupt can hit this statement only while another one is open on the connection; the watchdog is idle either way.
      }
    }
    if (fired) log("warn", "query interrupted at its time budget", { budgetMs: budget.budgetMs });
  }
}

/**
 * On PostgreSQL, the budget of the statements `fn` runs: this transaction's
 * statement_timeout is the budget while they run (each statement gets the
 * whole budget; the server cancels one that overruns, 57014), then back to
 * what it was (the pool's DUALMIND_PG_STATEMENT_TIMEOUT_MS). A cancelled
 * statement is answered like SQLite's interrupt: 422 query_too_expensive.
 */
export async function runWithinBudgetPg<T>({
  tx,
  budget,
  fn,
  schema,
  restore = true,
}: {
  tx: SqlRunner;
  budget: QueryBudget;
  fn: () => Promise<T>;
  /** Also point the transaction at this store's schema (as useStoreSchema does), in the same statement. */
  schema?: string;
  /** false: the transaction ends when `fn` does, so the pool's limit need not be put back. */
  restore?: boolean;
}): Promise<T> {
  // The budget may only tighten the pool's own limit (in ms as an interval; 0 is none), never loosen it.
  const budgetMs = Math.max(1, Math.ceil(budget.budgetMs));
  const [{ previous }] = (
    await tx.execute(
      sql`select s.previous, set_config('statement_timeout', (case when s.ms = 0 then ${budgetMs} else least(${budgetMs}, s.ms) end)::text, true)${schema ? sql`, set_config('search_path', ${`${quoteIdent(schema)}, public`}, true)` : sql``}
        from (select current_setting('statement_timeout') as previous, ceil(extract(epoch from current_setting('statement_timeout')::interval) * 1000)::bigint as ms) s`,
    )
  ).rows as { previous: string }[];
  let result: T;
  try {
    result = await fn();
  } catch (e) {
    if (dbErrorCode(e) !== "57014") throw e;
    log("warn", "query cancelled at its time budget", { budgetMs: budget.budgetMs });
    throw tooExpensive(budget);
  }
  if (restore) await tx.execute(sql`select set_config('statement_timeout', ${previous}, true)`);
  return result;
}
