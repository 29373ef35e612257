import { AsyncLocalStorage } from "node:async_hooks";
import type { StoreHandle } from "./connection";

/** The store handles one piece of work holds (connection.ts holdingStoreHandles); `ended` once it settled. */
export type Holds = { handles: Set<StoreHandle>; ended: boolean };

/** What one piece of work (a request, a job, an embed batch) carries across its awaits. */
export type WorkScope = {
  holds?: Holds;
  /** The query budget every statement of the work shares (query-budget.ts withSharedQueryBudget). */
  budget?: { remainingMs: number };
  /** The token a request or MCP call writes with (its label), for a store's write policy (lib/index/write-policy.ts). */
  /** The agent writing (a bearer token's request, REST or MCP): its actor and token label; unset for people and the CLI. */
  writer?: { tokenLabel: string | null; actor?: string | null };
};

/**
 * One AsyncLocalStorage for all of it, one per process (on globalThis): Node 20
 * copies every AsyncLocalStorage that was ever used onto each new promise, so
 * each one costs every request of the process, and Next's build holds a copy
 * of lib/db per layer it bundles for (route handlers, pages, instrumentation),
 * each with module-level instances of its own.
 */
const g = globalThis as unknown as { __dualmindWorkScope?: AsyncLocalStorage<WorkScope> };
export const workScope: AsyncLocalStorage<WorkScope> = (g.__dualmindWorkScope ??= new AsyncLocalStorage<WorkScope>());

/** Run `fn` with `part` of the scope set, the rest of the work's scope kept. */
export function withinWorkScope<T>({ part, fn }: { part: WorkScope; fn: () => T }): T {
  return workScope.run({ ...workScope.getStore(), ...part }, fn);
}
