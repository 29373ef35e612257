import Database from "better-sqlite3";
import fs from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { QUERY_BUDGET_EXTENSION, loadQueryBudget, runWithinBudget, startQueryBudget } from "@/lib/db/query-budget";

/**
 * The query budget's watchdog thread (native/query_budget.c) costs nothing
 * per budgeted statement: arming moves a deadline, disarming clears it, and
 * the thread is woken only when it must interrupt sooner than it would by
 * itself. Counted with the kernel's per-thread context switches (Linux).
 */
const RUNAWAY = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c";

/** This process's watchdog threads (native/query_budget.c names them), by thread id: not the runtime's own threads, which come and go. */
const threads = () => new Set(fs.readdirSync("/proc/self/task").filter((tid) => fs.readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim() === "dm-query-budget"));

/** Voluntary context switches of one thread of this process (each sleep of it that ended is one). */
function wakeups(tid: string): number {
  const status = fs.readFileSync(`/proc/self/task/${tid}/status`, "utf8");
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1]);
}

/**
 * Until a new thread sleeps in its wait: asleep, and not woken for 20 ms while this thread holds nothing it
 * needs. Until then (a loaded machine may not have run it yet) it races the arms for the mutex, which is its start, not the
 * wake-ups counted.
 */
async function settled(tid: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const seen = wakeups(tid);
    await new Promise((r) => setTimeout(r, 20));
    const state = /State:\s+(\S)/.exec(fs.readFileSync(`/proc/self/task/${tid}/status`, "utf8"))?.[1];
    if (state === "S" && wakeups(tid) === seen) return;
  }
  throw new Error(`thread ${tid} never settled`);
}

describe.skipIf(!fs.existsSync(QUERY_BUDGET_EXTENSION))("the query budget's watchdog", () => {
  let sqlite: Database.Database;
  beforeEach(() => {
    sqlite = new Database(":memory:");
    expect(loadQueryBudget({ sqlite }).available).toBe(true);
  });
  afterEach(() => sqlite.close());

  it.skipIf(!fs.existsSync("/proc/self/task"))("is not woken by each budgeted statement, only about once per budget", async () => {
    const select = sqlite.prepare("select 1 as one");
    // The first arm starts the thread: the one watchdog that was not there before.
    const had = threads();
    runWithinBudget({ sqlite, budget: startQueryBudget({ hint: "test", budgetMs: 60_000 }), fn: () => select.get() });
    // It names itself once it runs (a loaded machine may not have run it yet).
    let started: string[] = [];
    for (let i = 0; i < 500 && started.length === 0; i++) {
      started = [...threads()].filter((tid) => !had.has(tid));
      if (started.length === 0) await new Promise((r) => setTimeout(r, 10));
    }
    expect(started).toHaveLength(1);
    await settled(started[0]);
    const before = wakeups(started[0]);
    for (let i = 0; i < 2000; i++) {
      expect(runWithinBudget({ sqlite, budget: startQueryBudget({ hint: "test", budgetMs: 60_000 }), fn: () => select.get() })).toEqual({ one: 1 });
    }
    // Two signals per statement woke it 4,000 times; a deadline moved later wakes it not at all.
    expect(wakeups(started[0]) - before).toBeLessThan(20);
  });

  it("still interrupts at an earlier deadline armed while it sleeps until a later one", () => {
    runWithinBudget({ sqlite, budget: startQueryBudget({ hint: "test", budgetMs: 60_000 }), fn: () => sqlite.prepare("select 1").get() });
    // The watchdog now sleeps until a minute from the first arm; this deadline is 50 ms away.
    const budget = startQueryBudget({ hint: "narrow the query", budgetMs: 50 });
    expect(() => runWithinBudget({ sqlite, budget, fn: () => sqlite.prepare(RUNAWAY).get() })).toThrow(expect.objectContaining({ code: "query_too_expensive" }));
    expect(sqlite.prepare("select 41 + 1 as n").get()).toEqual({ n: 42 });
  });

  it("does not interrupt a statement run after a budgeted one was disarmed", () => {
    runWithinBudget({ sqlite, budget: startQueryBudget({ hint: "test", budgetMs: 20 }), fn: () => sqlite.prepare("select 1").get() });
    // The disarmed 20 ms deadline passes while this unbudgeted statement runs: it finishes.
    const n = sqlite.prepare("with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000000) select count(*) as n from c").get();
    expect(n).toEqual({ n: 3_000_000 });
  });

  it("disarm(ms) answers whether the deadline fired and arms the enclosing deadline again", () => {
    expect(sqlite.prepare("select dualmind_budget_arm(60000)").pluck().get()).toBe(1);
    expect(sqlite.prepare("select dualmind_budget_disarm(30)").pluck().get()).toBe(0);
    expect(() => sqlite.prepare(RUNAWAY).get()).toThrow(expect.objectContaining({ code: "SQLITE_INTERRUPT" }));
    expect(sqlite.prepare("select dualmind_budget_disarm()").pluck().get()).toBe(1);
    expect(() => sqlite.prepare("select dualmind_budget_disarm(1, 2)").get()).toThrow(/at most one argument/);
  });
});
