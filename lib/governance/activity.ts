import { sql, type SQL } from "drizzle-orm";
import { z } from "zod";
import { getGovernance } from "../db/connection";
import { getPg } from "../db/pg";
import { runWithinBudget, runWithinBudgetPg, startQueryBudget, type QueryBudget } from "../db/query-budget";
import { AppError } from "../errors";
import { STORE_NAME_RE } from "../names";
import { parseJsonColumnOr } from "../common";
import { RETRIEVAL_KINDS, tallyRetrievalByAgent } from "./retrieval-counts";

/**
 * The activity explorer over the audit log (docs/api-and-mcp.md, `/activity`):
 * one query text for both databases. Every request reads at most
 * ACTIVITY_SCAN_WINDOW log ids below its cursor; a page the window cut short
 * says so (`complete: false`) and its cursor continues below the window.
 */
export const ACTIVITY_PAGE_MAX = 200;
export const ACTIVITY_SCAN_WINDOW = 100_000;

const epochOrIso = z.union([z.number().int().nonnegative(), z.string().max(40)]).transform((v, ctx) => {
  const ms = typeof v === "number" ? v : /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(ms)) {
    ctx.addIssue({ code: "custom", message: "a time is epoch milliseconds or an ISO 8601 date" });
    return z.NEVER;
  }
  return ms;
});

/** The filter every surface takes (API query, MCP arguments, CLI flags, the page's form). */
export const activityFilterSchema = z
  .object({
    agent: z.string().min(1).max(200).optional().describe("an agent id: its token's actions (actor agent:<id>)"),
    actor: z.string().min(1).max(300).optional().describe("an exact actor: agent:<id>, user:<name>, cli:<os user> or system:<part>"),
    action: z.string().min(1).max(100).optional().describe("an action (memory.create), or a family ending in a dot (memory.)"),
    store: z.string().regex(STORE_NAME_RE).optional().describe("only what touched this store"),
    target: z.string().min(1).max(1000).optional().describe("an exact target, e.g. task:<id> or store:<s>/memory:<path>"),
    since: epochOrIso.optional().describe("from this time (epoch ms or ISO 8601)"),
    until: epochOrIso.optional().describe("up to this time (epoch ms or ISO 8601)"),
    before: z.coerce.number().int().positive().optional().describe("the cursor: entries older than this id (next_cursor of the previous page)"),
    limit: z.coerce.number().int().min(1).max(ACTIVITY_PAGE_MAX).default(50),
  })
  .strict();
export type ActivityFilter = z.output<typeof activityFilterSchema>;

/** A summary names one actor (by agent id or exactly) and optionally a store and a time range. */
export const activitySummarySchema = activityFilterSchema
  .pick({ agent: true, actor: true, store: true, since: true, until: true })
  .strict()
  .refine((f) => f.agent !== undefined || f.actor !== undefined, { message: "name an agent or an actor" });

/*
 * What the activity log returns, declared once: the types are these schemas' z.infer, and the API's and MCP's
 * response schemas (lib/api/responses/activity.ts) are these schemas.
 */
const count = z.number().int().min(0);
const activityEntrySchema = z.strictObject({
  id: z.number().int(),
  ts: z.number(),
  actor: z.string(),
  action: z.string(),
  target: z.string().nullable(),
  reason: z.string().nullable(),
  /** What the action recorded (JSON as written by the action). */
  details: z.unknown(),
  /** The dashboard page of what the entry touched, when there is one. */
  link: z.string().nullable(),
});
export type ActivityEntry = z.infer<typeof activityEntrySchema>;

export const activityPageSchema = z.strictObject({
  entries: z.array(activityEntrySchema),
  /** Pass as `before` for the next (older) page; null when the log has nothing older. */
  next_cursor: z.number().int().nullable(),
  /** False when the scan window ran out before the page filled: older matches may exist past next_cursor. */
  complete: z.boolean(),
});
export type ActivityPage = z.infer<typeof activityPageSchema>;

export const activitySummaryAnswerSchema = z.strictObject({
  actor: z.string(),
  since: z.number().nullable(),
  until: z.number().nullable(),
  /** Audited actions (the rows of by_action). */
  total: count,
  /** Audited changes other than reviews: memory, document, store, graph writes. */
  writes: count,
  /** Validations this actor posted on tasks (its own or another agent's). */
  reviews: count,
  /** An agent's searches, recalls and remembers with their failures, counted by the hour (whole hours the range touches). */
  retrieval: z.array(z.strictObject({ kind: z.enum(RETRIEVAL_KINDS), count, failures: count })),
  /** Retrieval requests that failed. */
  failures: count,
  first_ts: z.number().nullable(),
  last_ts: z.number().nullable(),
  by_action: z.array(z.strictObject({ action: z.string(), count })),
  complete: z.boolean(),
});
export type ActivitySummary = z.infer<typeof activitySummaryAnswerSchema>;

/**
 * A token limited to some stores reads only what touched one of them: it must
 * name the store (the route's allow-list check has already refused any other).
 */
export function assertStoreNamedWhenLimited({ principal, store }: { principal: { stores: string[] | null } | null; store: string | undefined }): void {
  if (principal && principal.stores !== null && store === undefined) {
    throw new AppError("forbidden", "a token limited to some stores reads the activity of one of them: name it in `store`");
  }
}

type RawRow = { id: number | string; ts: number | string; actor: string; action: string; target: string | null; reason: string | null; details: string | null };

const ACTIVITY_HINT = "narrow the activity filter: name an agent, an action, a store or a shorter time range";

/**
 * Run a read on whichever database holds the ledger, within the query budget
 * (DUALMIND_QUERY_BUDGET_MS): a filter that matches little in a long window
 * answers 422 query_too_expensive instead of holding the database. PostgreSQL
 * returns bigints as strings: callers Number() them.
 */
async function selectRows<T>(query: SQL, budget: QueryBudget): Promise<T[]> {
  const pg = getPg();
  if (pg) return (await pg).db.transaction(async (tx) => runWithinBudgetPg({ tx, budget, fn: async () => (await tx.execute(query)).rows as T[] }));
  const { sqlite, db } = getGovernance();
  return runWithinBudget({ sqlite, budget, fn: () => db.all(query) as T[] });
}

function likePrefix(prefix: string): string {
  return prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";
}

/** The audited actions that review someone's work. */
const REVIEW_ACTIONS = new Set(["ledger.validation"]);

/** Account administration (users, tokens, sign-in lockouts): shown to admins only. */
const ACCOUNT_FAMILIES = ["user.", "token.", "auth."];

/** The where-clause of a filter, without the id window. */
function filterConditions(f: Omit<ActivityFilter, "limit" | "before">, { accounts }: { accounts: boolean }): SQL[] {
  const where: SQL[] = [];
  if (!accounts) for (const family of ACCOUNT_FAMILIES) where.push(sql`action not like ${likePrefix(family)} escape '\\'`);
  const actor = f.actor ?? (f.agent ? `agent:${f.agent}` : undefined);
  if (actor) where.push(sql`actor = ${actor}`);
  if (f.agent && f.actor && f.actor !== `agent:${f.agent}`) where.push(sql`1 = 0`);
  if (f.action?.endsWith(".")) where.push(sql`action like ${likePrefix(f.action)} escape '\\'`);
  else if (f.action) where.push(sql`action = ${f.action}`);
  if (f.store) {
    const s = `store:${f.store}`;
    where.push(sql`(target = ${s} or target like ${likePrefix(`${s}/`)} escape '\\' or target like ${likePrefix(`${s}:`)} escape '\\')`);
  }
  if (f.target) where.push(sql`target = ${f.target}`);
  if (f.since !== undefined) where.push(sql`ts >= ${f.since}`);
  if (f.until !== undefined) where.push(sql`ts <= ${f.until}`);
  return where;
}

/*
 * The id range a time range covers, read off the ts index in one step each:
 * the log is appended in time order, so ids and times rise together. (A clock
 * stepped back by an operator can put a row a little outside its slot; the
 * rows read are still filtered by ts.)
 */

/** The highest id a page may read: below the cursor and no later than `until`. */
async function topId({ before, until, budget }: { before?: number; until?: number; budget: QueryBudget }): Promise<number | null> {
  const [row] = await selectRows<{ top: number | string | null }>(before !== undefined ? sql`select max(id) as top from audit_log where id < ${before}` : sql`select max(id) as top from audit_log`, budget);
  if (row?.top == null) return null;
  if (until === undefined) return Number(row.top);
  const [atUntil] = await selectRows<{ id: number | string }>(sql`select id from audit_log where ts <= ${until} order by ts desc, id desc limit 1`, budget);
  return atUntil ? Math.min(Number(row.top), Number(atUntil.id)) : null;
}

/** The lowest id a range may read: 1, or the first at or after `since` (none: past the end). */
async function lowestId({ since, budget }: { since?: number; budget: QueryBudget }): Promise<number> {
  if (since === undefined) return 1;
  const [first] = await selectRows<{ id: number | string }>(sql`select id from audit_log where ts >= ${since} order by ts, id limit 1`, budget);
  return first ? Number(first.id) : Number.MAX_SAFE_INTEGER;
}

/** Where an entry's target lives on the dashboard. */
export function activityLink(target: string | null): string | null {
  if (!target) return null;
  const inStore = /^store:([^/:]+)(?:\/([a-z_]+):(.*))?$/.exec(target);
  if (inStore) {
    const [, store, kind, id] = inStore;
    const s = encodeURIComponent(store);
    if (!kind) return `/stores/${s}`;
    if (kind === "memory") return `/memories?store=${s}&path=${encodeURIComponent(id)}`;
    if (kind === "node") return `/graph/${s}/nodes/${encodeURIComponent(id)}`;
    if (kind === "thought") return `/graph/${s}/thoughts/${encodeURIComponent(id)}`;
    if (kind === "trace") return `/reflection/${s}/traces/${encodeURIComponent(id)}`;
    if (kind === "learning") return `/reflection/${s}/learnings/${encodeURIComponent(id)}`;
    return `/stores/${s}`;
  }
  const recallHit = /^store:([^/:]+):recall_hit:/.exec(target);
  if (recallHit) return `/reflection?store=${encodeURIComponent(recallHit[1])}`;
  const task = /^task:(.+)$/.exec(target);
  if (task) return `/ledger/tasks/${encodeURIComponent(task[1])}`;
  const session = /^dialectic_session:(.+)$/.exec(target);
  if (session) return `/sessions/${encodeURIComponent(session[1])}`;
  return null;
}

/**
 * One page of the audit log, newest first, filtered. `accounts: false` (a
 * dashboard viewer) leaves out user, token and sign-in administration.
 */
export async function listActivity({ filter, accounts = true, scanWindow = ACTIVITY_SCAN_WINDOW, budgetMs }: { filter: ActivityFilter; accounts?: boolean; scanWindow?: number; budgetMs?: number }): Promise<ActivityPage> {
  const budget = startQueryBudget({ hint: ACTIVITY_HINT, budgetMs });
  const top = await topId({ before: filter.before, until: filter.until, budget });
  if (top === null) return { entries: [], next_cursor: null, complete: true };
  const low = await lowestId({ since: filter.since, budget });
  const floor = Math.max(top - scanWindow + 1, low);
  if (floor > top) return { entries: [], next_cursor: null, complete: true };
  const where = [sql`id <= ${top}`, sql`id >= ${floor}`, ...filterConditions(filter, { accounts })];
  const rows = await selectRows<RawRow>(
    sql`select id, ts, actor, action, target, reason, details from audit_log where ${sql.join(where, sql` and `)} order by id desc limit ${filter.limit}`,
    budget,
  );
  const entries = rows.map((r) => ({ id: Number(r.id), ts: Number(r.ts), actor: r.actor, action: r.action, target: r.target, reason: r.reason, details: parseJsonColumnOr<unknown>({ text: r.details, fallback: r.details }), link: activityLink(r.target) }));
  const full = entries.length === filter.limit;
  const older = floor > low;
  if (full) return { entries, next_cursor: entries[entries.length - 1]!.id, complete: true };
  return { entries, next_cursor: older ? floor : null, complete: !older };
}

/** What one actor did over a time range: counts per action (within one scan window, newest first). */
export async function summarizeActivity({ filter, accounts = true, scanWindow = ACTIVITY_SCAN_WINDOW, budgetMs }: { filter: z.output<typeof activitySummarySchema>; accounts?: boolean; scanWindow?: number; budgetMs?: number }): Promise<ActivitySummary> {
  const budget = startQueryBudget({ hint: ACTIVITY_HINT, budgetMs });
  const actor = filter.actor ?? (filter.agent ? `agent:${filter.agent}` : null);
  const agentId = actor?.startsWith("agent:") ? actor.slice("agent:".length) : null;
  const retrieval = agentId === null ? [] : await tallyRetrievalByAgent({ agentId, store: filter.store, since: filter.since, until: filter.until });
  const failures = retrieval.reduce((n, t) => n + t.failures, 0);
  const empty: ActivitySummary = { actor: actor ?? "", since: filter.since ?? null, until: filter.until ?? null, total: 0, writes: 0, reviews: 0, retrieval, failures, first_ts: null, last_ts: null, by_action: [], complete: true };
  if (!actor) return empty;
  const top = await topId({ until: filter.until, budget });
  if (top === null) return empty;
  const low = await lowestId({ since: filter.since, budget });
  const floor = Math.max(top - scanWindow + 1, low);
  const where = [sql`id <= ${top}`, sql`id >= ${floor}`, ...filterConditions({ actor, store: filter.store, since: filter.since, until: filter.until }, { accounts })];
  const rows = await selectRows<{ action: string; n: number | string; first_ts: number | string; last_ts: number | string }>(
    sql`select action, count(*) as n, min(ts) as first_ts, max(ts) as last_ts from audit_log where ${sql.join(where, sql` and `)} group by action order by count(*) desc, action`,
    budget,
  );
  const byAction = rows.map((r) => ({ action: r.action, count: Number(r.n) }));
  const total = byAction.reduce((a, r) => a + r.count, 0);
  const reviews = byAction.filter((r) => REVIEW_ACTIONS.has(r.action)).reduce((a, r) => a + r.count, 0);
  return {
    actor,
    since: filter.since ?? null,
    until: filter.until ?? null,
    total,
    writes: total - reviews,
    reviews,
    retrieval,
    failures,
    first_ts: rows.length ? Math.min(...rows.map((r) => Number(r.first_ts))) : null,
    last_ts: rows.length ? Math.max(...rows.map((r) => Number(r.last_ts))) : null,
    by_action: byAction,
    complete: floor <= low,
  };
}
