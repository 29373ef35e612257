import { sql, type SQL } from "drizzle-orm";
import { getConfig } from "../config";
import { getGovernance, type GovernanceHandle } from "../db/connection";
import { processLedger } from "../db/engine";
import { getPg } from "../db/pg";
import { readLedger, sqlRows, sqlRun, writeLedger, type LedgerHandle, type OnLedger } from "../db/port";
import { isAppError } from "../errors";
import { log } from "../log";

/**
 * Per-agent retrieval counts for the activity summary (docs/api-and-mcp.md):
 * a request costs one in-memory increment and a timer merges the cells into
 * `retrieval_counts`, so no request waits on a write for being counted. The
 * key space is bounded: a server-issued agent id, a fixed kind, a store that
 * answered; past RETRIEVAL_COUNT_KEYS_MAX cells, counts go under no agent and
 * the next flush logs how many.
 */
export const RETRIEVAL_KINDS = ["search", "recall", "remember"] as const;
export type RetrievalKind = (typeof RETRIEVAL_KINDS)[number];

export const RETRIEVAL_COUNT_KEYS_MAX = 10_000;
export const RETRIEVAL_FLUSH_EVERY_MS = 60_000;
const HOUR_MS = 3_600_000;
const UPSERT_ROWS_PER_STATEMENT = 200;

type Cell = { hourTs: number; agentId: string; store: string; kind: RetrievalKind; count: number; failures: number };

const g = globalThis as unknown as { __dualmindRetrievalCounts?: Map<string, Cell>; __dualmindRetrievalOverflow?: number; __dualmindRetrievalFlush?: NodeJS.Timeout };

function cells(): Map<string, Cell> {
  g.__dualmindRetrievalCounts ??= new Map();
  return g.__dualmindRetrievalCounts;
}

/** Add to a cell; false when it is new and the map is full (unless `always`). */
function add(into: Map<string, Cell>, c: Omit<Cell, "count" | "failures">, count: number, failures: number, { always = false } = {}): boolean {
  const key = `${c.hourTs}\u0000${c.agentId}\u0000${c.store}\u0000${c.kind}`;
  let cell = into.get(key);
  if (!cell) {
    if (!always && into.size >= RETRIEVAL_COUNT_KEYS_MAX) return false;
    cell = { ...c, count: 0, failures: 0 };
    into.set(key, cell);
  }
  cell.count += count;
  cell.failures += failures;
  return true;
}

/** Count one retrieval request (the request path's only cost: a map increment). */
export function countRetrieval({ agentId, store, kind, failed, now = Date.now() }: { agentId: string; store: string; kind: RetrievalKind; failed: boolean; now?: number }): void {
  const hourTs = now - (now % HOUR_MS);
  const f = failed ? 1 : 0;
  if (add(cells(), { hourTs, agentId, store, kind }, 1, f)) return;
  g.__dualmindRetrievalOverflow = (g.__dualmindRetrievalOverflow ?? 0) + 1;
  // The overflow cell is kept whatever the map holds: totals stay true, only attribution is lost.
  add(cells(), { hourTs, agentId: "", store: "", kind }, 1, f, { always: true });
}

/**
 * Run a retrieval for an agent and count it: a success under its store, a
 * failure too (an unknown store's failure under no store, so a client's
 * made-up names never become keys).
 */
export async function countedRetrieval<T>({ kind, agentId, store, work }: { kind: RetrievalKind; agentId: string; store: string; work: () => T | Promise<T> }): Promise<T> {
  try {
    const result = await work();
    countRetrieval({ agentId, store, kind, failed: false });
    return result;
  } catch (e) {
    countRetrieval({ agentId, store: isAppError(e) && e.code === "not_found" ? "" : store, kind, failed: true });
    throw e;
  }
}

function upsert(batch: Cell[]): SQL {
  const values = sql.join(
    batch.map((c) => sql`(${c.hourTs}, ${c.agentId}, ${c.store}, ${c.kind}, ${c.count}, ${c.failures})`),
    sql`, `,
  );
  return sql`insert into retrieval_counts (hour_ts, agent_id, store, kind, count, failures) values ${values}
    on conflict (agent_id, hour_ts, store, kind) do update set count = retrieval_counts.count + excluded.count, failures = retrieval_counts.failures + excluded.failures`;
}

/** Merge cells into the table, in one transaction (both backends). */
export function saveRetrievalCounts<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, rows }: { handle?: H; rows: Cell[] }): OnLedger<H, number> {
  return writeLedger(handle, function* () {
    for (let i = 0; i < rows.length; i += UPSERT_ROWS_PER_STATEMENT) yield* sqlRun(upsert(rows.slice(i, i + UPSERT_ROWS_PER_STATEMENT)));
    return rows.length;
  });
}

/** Drop hours older than DUALMIND_ACTIVITY_COUNTS_MAX_DAYS. */
export function pruneRetrievalCounts<H extends LedgerHandle = GovernanceHandle>({ handle = getGovernance() as H, now = Date.now() }: { handle?: H; now?: number } = {}): OnLedger<H, void> {
  const before = now - getConfig().limits.activityCountsMaxDays * 86_400_000;
  return writeLedger(handle, sqlRun(sql`delete from retrieval_counts where hour_ts < ${before}`));
}

/**
 * Merge this process's waiting counts into the database. A failed write puts
 * them back (up to the key bound) and throws; the timer logs it.
 */
export async function flushRetrievalCounts(): Promise<number> {
  const waiting = cells();
  if (waiting.size === 0) return 0;
  const overflow = g.__dualmindRetrievalOverflow ?? 0;
  if (overflow > 0) {
    log("warn", "activity: more agents and stores counted between flushes than the in-memory bound; these counts were kept under no agent", { counts: overflow, bound: RETRIEVAL_COUNT_KEYS_MAX });
    g.__dualmindRetrievalOverflow = 0;
  }
  const rows = [...waiting.values()];
  g.__dualmindRetrievalCounts = new Map();
  try {
    return await saveRetrievalCounts({ handle: await processLedger(), rows });
  } catch (e) {
    let lost = 0;
    for (const c of rows) if (!add(cells(), c, c.count, c.failures)) lost += c.count;
    if (lost > 0) log("error", "activity: retrieval counts dropped after a failed save", { counts: lost });
    throw e;
  }
}

/** A synchronous last flush for process exit (SQLite writes synchronously; PostgreSQL's flush is started on the signal instead). */
function flushOnExit(): void {
  if (getPg() || cells().size === 0) return;
  const rows = [...cells().values()];
  g.__dualmindRetrievalCounts = new Map();
  try {
    saveRetrievalCounts({ rows });
  } catch (e) {
    log("error", "activity: retrieval counts not saved at exit", { error: (e as Error).message, cells: rows.length });
  }
}

/** Flush once a minute, prune once an hour, and flush at shutdown (idempotent across Next dev reloads). */
export function startRetrievalCountFlush(): void {
  if (g.__dualmindRetrievalFlush) return;
  let lastPrune = 0;
  const tick = async () => {
    try {
      await flushRetrievalCounts();
      if (Date.now() - lastPrune >= HOUR_MS) {
        lastPrune = Date.now();
        await pruneRetrievalCounts({ handle: await processLedger() });
      }
    } catch (e) {
      log("error", "activity: could not save retrieval counts", { error: (e as Error).message });
    }
  };
  g.__dualmindRetrievalFlush = setInterval(() => void tick(), RETRIEVAL_FLUSH_EVERY_MS);
  g.__dualmindRetrievalFlush.unref();
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      // Next.js stops the server on these signals itself; where nothing else listens, stop as the signal would have.
      void tick().finally(() => {
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
    });
  }
  process.once("exit", flushOnExit);
}

export type RetrievalTally = { kind: RetrievalKind; count: number; failures: number };

/**
 * One agent's counts per kind over the hours a range touches, saved ones and
 * this process's waiting ones together (so a search shows at once here; other
 * replicas' within a flush).
 */
export async function tallyRetrievalByAgent({ agentId, store, since, until }: { agentId: string; store?: string; since?: number; until?: number }): Promise<RetrievalTally[]> {
  const where: SQL[] = [sql`agent_id = ${agentId}`];
  const from = since === undefined ? undefined : since - (since % HOUR_MS);
  if (from !== undefined) where.push(sql`hour_ts >= ${from}`);
  if (until !== undefined) where.push(sql`hour_ts <= ${until}`);
  if (store !== undefined) where.push(sql`store = ${store}`);
  const handle = await processLedger();
  const saved = await readLedger(handle, sqlRows<{ kind: string; n: number | string; f: number | string }>(sql`select kind, sum(count) as n, sum(failures) as f from retrieval_counts where ${sql.join(where, sql` and `)} group by kind`));
  const tally = new Map<string, RetrievalTally>(RETRIEVAL_KINDS.map((kind) => [kind, { kind, count: 0, failures: 0 }]));
  for (const r of saved) {
    const t = tally.get(r.kind);
    if (t) {
      t.count += Number(r.n);
      t.failures += Number(r.f);
    }
  }
  for (const c of cells().values()) {
    if (c.agentId !== agentId || (store !== undefined && c.store !== store) || (from !== undefined && c.hourTs < from) || (until !== undefined && c.hourTs > until)) continue;
    const t = tally.get(c.kind)!;
    t.count += c.count;
    t.failures += c.failures;
  }
  return [...tally.values()];
}
