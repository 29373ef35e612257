import { sql, type SQL } from "drizzle-orm";
import { limitReached } from "../common";
import { getConfig } from "../config";
import { getGovernance } from "../db/connection";
import { engineStep, sqlRows, type Op } from "../db/port";
import { AppError } from "../errors";

/** The ledger's and the reviews' limits (SECURITY.md, "Limits"): no agent's token can make governance data or answers grow without bound. */

/** Refuse a field whose stored JSON is larger than DUALMIND_GOVERNANCE_FIELD_MAX_BYTES (422, naming the limit). */
export function assertFieldSize({ field, value }: { field: string; value: unknown }): void {
  const max = getConfig().limits.governanceFieldMaxBytes;
  const bytes = Buffer.byteLength(JSON.stringify(value ?? null), "utf8");
  if (bytes > max) throw limitReached({ limit: "DUALMIND_GOVERNANCE_FIELD_MAX_BYTES", message: `${field} is ${bytes} bytes as JSON, its most is ${max}` });
}

/** Refuse a new open item past an agent's count limit (422, naming the limit). */
export function assertAgentCount({ limit, what, agentId, open, max }: { limit: string; what: string; agentId: string; open: number; max: number }): void {
  if (open >= max) throw limitReached({ limit, message: `agent ${agentId} has ${open} ${what}, its most is ${max}; finish some first` });
}

/** Used bytes of a SQLite database: its pages less the free ones. */
function sqliteUsedBytes(db: ReturnType<typeof getGovernance>["sqlite"]): number {
  return (Number(db.pragma("page_count", { simple: true })) - Number(db.pragma("freelist_count", { simple: true }))) * Number(db.pragma("page_size", { simple: true }));
}

type PgExecutor = { execute: (q: SQL) => Promise<{ rows: unknown[] }> };

/** The ledger's tables' size on PostgreSQL (they live in `public`, beside the stores' schemas): milliseconds of server time. */
const pgLedgerBytes = async (tx: PgExecutor) =>
  Number(((await tx.execute(sql`select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as n from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind = 'r'`)).rows[0] as { n?: unknown } | undefined)?.n ?? 0);

/** How long a measure of the ledger on PostgreSQL stands before it is taken again. */
const LEDGER_MEASURE_MS = 1000;
/** Databases one process keeps a measure of (a process serves one; tests open many): the oldest is dropped past this. */
const LEDGER_MEASURES_MAX = 64;

/** The last measure of one database's ledger, and the counted bytes its rows grew by since. */
type LedgerMeasure = { at: number; measured: number; counted: number; grown: number };
const ledgerMeasures = new Map<string, LedgerMeasure>();

/**
 * The ledger's size on PostgreSQL as every limit check reads it: measured
 * (pgLedgerBytes) at most once a second per database — keyed by the server
 * and database the transaction is on — and between measures the measure plus
 * what the ledger's counted rows grew by since: the sum of agent_ledger_usage
 * (every agent's rows and audit rows and the embed worker's facts, each
 * counted as an upper bound of what it takes on disk), committed on any
 * replica, one small read per check. Only growth counts (rows deleted since
 * make no room until the next measure). So between measures the ledger passes
 * DUALMIND_GOVERNANCE_MAX_BYTES by at most the writes in flight when it fills
 * (one per concurrent transaction, each within the write limits) and the rows
 * no share counts written within the second (people's overrides and audit
 * rows); SECURITY.md states the bound.
 */
async function pgLedgerFigure(tx: PgExecutor): Promise<number> {
  const found = (await tx.execute(sql`select concat_ws('/', inet_server_addr(), inet_server_port(), pg_postmaster_start_time(), current_database()) as db, (select coalesce(sum(bytes), 0) from public.agent_ledger_usage)::bigint as counted`)).rows[0] as { db: string; counted: unknown };
  const counted = Number(found.counted);
  const now = Date.now();
  const last = ledgerMeasures.get(found.db);
  if (last && now - last.at <= LEDGER_MEASURE_MS) {
    last.grown += Math.max(0, counted - last.counted);
    last.counted = counted;
    return last.measured + last.grown;
  }
  const measured = await pgLedgerBytes(tx);
  ledgerMeasures.delete(found.db);
  if (ledgerMeasures.size >= LEDGER_MEASURES_MAX) ledgerMeasures.delete(ledgerMeasures.keys().next().value as string);
  ledgerMeasures.set(found.db, { at: now, measured, counted, grown: 0 });
  return measured;
}

/**
 * Bytes the ledger holds: governance.db's used pages (three pragmas, read on
 * every check), or pgLedgerFigure on PostgreSQL.
 */
function ledgerBytes(): Op<number> {
  return engineStep({ sqlite: (h) => sqliteUsedBytes(h.sqlite), pg: pgLedgerFigure });
}

/** The 507 of a full ledger: `refused` says which writes wait for an operator to make room. */
function assertLedgerNotFull({ bytes, refused }: { bytes: number; refused: string }): void {
  const max = getConfig().limits.governanceMaxBytes;
  if (bytes > max) throw new AppError("insufficient_storage", `the ledger holds ${bytes} bytes, past its most of ${max}; ${refused} are refused until an operator makes room (limit DUALMIND_GOVERNANCE_MAX_BYTES)`, [{ path: "limit", message: "ledger full", limit: "DUALMIND_GOVERNANCE_MAX_BYTES" }]);
}

/**
 * Refuse an agent's ledger or review write when the ledger is past
 * DUALMIND_GOVERNANCE_MAX_BYTES, or the agent's own share of it (its rows'
 * running total in agent_ledger_usage, kept by triggers) is past
 * DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT: the whole ledger full is 507 (the
 * machine's room), one agent past its share 422 (its own quota), so one agent
 * cannot fill the ledger for every other.
 */
export function* assertLedgerRoom({ agentId }: { agentId?: string } = {}): Op<void> {
  assertLedgerNotFull({ bytes: yield* ledgerBytes(), refused: "agents' new tasks, runs, validations, provenance and reviews" });
  if (agentId !== undefined) yield* assertShareKept({ agentId });
}

/** An agent's bytes of the ledger: the running total its rows' triggers keep (an upper bound of what they take on disk). */
function* agentLedgerBytes(agentId: string): Op<number> {
  const [own] = yield* sqlRows<{ bytes: unknown }>(sql`select bytes from agent_ledger_usage where agent_id = ${agentId}`);
  return Number(own?.bytes ?? 0);
}

/**
 * Refuse (422, the write's transaction rolls back) when the agent's rows,
 * counted with the rows this write just added, are past
 * DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT: called after an agent's ledger or
 * review write inside its transaction, so no write takes an agent past its
 * share, however large (a provenance batch of a thousand facts).
 */
export function* assertShareKept({ agentId }: { agentId: string }): Op<void> {
  const share = getConfig().limits.governanceMaxBytesPerAgent;
  const used = yield* agentLedgerBytes(agentId);
  if (used > share) throw limitReached({ limit: "DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT", message: `agent ${agentId} would hold ${used} bytes of the ledger with this write, past its share of ${share}; its new tasks, runs, validations, provenance and reviews are refused until some are removed or the share is raised` });
}

/**
 * The rule of an agent's audit row, over the engine's reads: refused (507)
 * while the ledger is past DUALMIND_GOVERNANCE_MAX_BYTES, and (422) while the
 * agent is past its share — the audit rows of its writes count toward its share
 * (a trigger on audit_log), so neither its store writes nor the admin actions of
 * a store-limited admin token can fill the ledger for every agent. A person's,
 * the CLI's and the server's own rows still go through, so an operator can
 * always make room.
 */
function checkAuditRoom({ actor, ledger, used }: { actor: string; ledger: number; used: (agentId: string) => number }): void {
  if (!actor.startsWith("agent:")) return;
  assertLedgerNotFull({ bytes: ledger, refused: "agents' audited writes (store writes, store admin actions)" });
  const agentId = actor.slice("agent:".length);
  const share = getConfig().limits.governanceMaxBytesPerAgent;
  const bytes = used(agentId);
  if (bytes > share) throw limitReached({ limit: "DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT", message: `agent ${agentId} holds ${bytes} bytes of the ledger (its ledger rows and the audit rows of its writes), past its share of ${share}; its writes are refused until the share is raised` });
}

const AGENT_USAGE_SQL = "select bytes from agent_ledger_usage where agent_id = ?";

/** checkAuditRoom on SQLite, by governance.db's own connection (appendAudit runs it before every row). */
export function assertAuditRoomSqlite({ actor }: { actor: string }): void {
  if (!actor.startsWith("agent:")) return;
  const { sqlite } = getGovernance();
  checkAuditRoom({ actor, ledger: sqliteUsedBytes(sqlite), used: (id) => Number((sqlite.prepare(AGENT_USAGE_SQL).get(id) as { bytes?: unknown } | undefined)?.bytes ?? 0) });
}

/** checkAuditRoom on PostgreSQL, in the caller's transaction (appendAuditPg runs it before every row). */
export async function assertAuditRoomPg({ tx, actor }: { tx: PgExecutor; actor: string }): Promise<void> {
  if (!actor.startsWith("agent:")) return;
  const agentId = actor.slice("agent:".length);
  const ledger = await pgLedgerFigure(tx);
  const used = Number(((await tx.execute(sql`select bytes from public.agent_ledger_usage where agent_id = ${agentId}`)).rows[0] as { bytes?: unknown } | undefined)?.bytes ?? 0);
  checkAuditRoom({ actor, ledger, used: () => used });
}

/**
 * The same check as a step at the start of an agent's store write, so a write
 * that would be refused at its audit row is refused before it writes anything
 * (on PostgreSQL a refused write's index entries outlive its rollback).
 */
export function assertAuditRoom({ actor }: { actor: string }): Op<void> {
  return engineStep({ sqlite: () => assertAuditRoomSqlite({ actor }), pg: (tx) => assertAuditRoomPg({ tx, actor }) });
}

/**
 * One list answer's rows within DUALMIND_LIST_MAX_BYTES: rows are taken in
 * order while their JSON fits (the first always), and `nextOffset` says where
 * the next page starts when rows remain (past the budget or past the page).
 */
export function withinListBudget<T>({ items, offset, total, size = jsonBytes }: { items: T[]; offset: number; total: number; size?: (item: T) => number }): { shown: T[]; nextOffset: number | null } {
  const n = fittingCount({ items, budget: getConfig().limits.listMaxBytes, size });
  return { shown: items.slice(0, n), nextOffset: nextOffsetOf({ offset, shown: n, total }) };
}

const jsonBytes = (x: unknown) => Buffer.byteLength(JSON.stringify(x), "utf8");

/** How many of `items`, taken in order, fit in `budget` bytes (the first always: an item is bounded by the write limits). */
function fittingCount<T>({ items, budget, size }: { items: readonly T[]; budget: number; size: (item: T) => number }): number {
  let used = 0;
  let n = 0;
  for (const item of items) {
    used += size(item);
    if (n > 0 && used > budget) break;
    n++;
  }
  return n;
}

/** Where the next page starts after `shown` rows from `offset`, or null at the end. */
export const nextOffsetOf = ({ offset, shown, total }: { offset: number; shown: number; total: number }): number | null => (offset + shown < total ? offset + shown : null);

/**
 * A list answer `{ [key]: rows, total }` cut to DUALMIND_LIST_MAX_BYTES, with
 * `next_offset` where the next page starts (null at the end): the store lists
 * (nodes, thoughts, traces, learnings) over the API and MCP. `budget: false` (the dashboard, which pages by number and
 * renders its page on the server) keeps the page whole.
 */
export function pageWithinBudget<K extends string, T>({ page, key, offset, budget = true }: { page: { [P in K]: T[] } & { total: number }; key: K; offset: number; budget?: boolean }): { [P in K]: T[] } & { total: number; next_offset: number | null } {
  if (!budget) return { ...page, next_offset: nextOffsetOf({ offset, shown: page[key].length, total: page.total }) };
  const { shown, nextOffset } = withinListBudget({ items: page[key], offset, total: page.total });
  return { ...page, [key]: shown, next_offset: nextOffset };
}

/**
 * A detail answer's lists (a task's runs, validations, overrides and
 * artifacts; an artifact's proofs) within DUALMIND_LIST_MAX_BYTES together:
 * each list keeps its `keep` end ("last": the newest of an oldest-first list)
 * within its share of the budget (the one at that end always: an item is
 * bounded by the write limits), and says how many it left out.
 */
export function boundedLists<L extends Record<string, unknown[]>>({ lists, keep }: { lists: L; keep: "first" | "last" }): { shown: L; omitted: { [K in keyof L]: number } } {
  const share = Math.floor(getConfig().limits.listMaxBytes / Math.max(1, Object.keys(lists).length));
  const shown = {} as Record<string, unknown[]>;
  const omitted = {} as Record<string, number>;
  for (const [name, items] of Object.entries(lists)) {
    const n = fittingCount({ items: keep === "last" ? [...items].reverse() : items, budget: share, size: jsonBytes });
    shown[name] = keep === "last" ? items.slice(items.length - n) : items.slice(0, n);
    omitted[name] = items.length - n;
  }
  return { shown: shown as L, omitted: omitted as { [K in keyof L]: number } };
}
