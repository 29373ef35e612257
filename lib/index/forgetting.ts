import { randomUUID } from "node:crypto";
import { sha256Hex } from "../common";
import { and, asc, desc, eq, inArray, isNotNull, like, lte, or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { z } from "zod";
import { remove, read, rows, tablePair, update, upsert, write, insert, type AnyStoreHandle, type Op, type TablePair } from "../db/port";
import * as sqliteIndex from "../db/schema/index";
import * as sqliteGraph from "../db/schema/graph";
import * as sqliteRecall from "../db/schema/recall";
import * as pg from "../db/schema/pg/store";
import { FORGET_KINDS, type ForgetPolicyRow, type ForgetRetiredRow, type ForgetRunRow } from "../db/schema/index";
import { auditStep } from "../governance/audit";
import { ledgerOverrideStep, ledgerRoomStep, type LedgerWho } from "./governed-ledger";
import { itemIdSchema, itemStateTable, retireByPolicyOp, visibleWhere } from "./item-state";

/**
 * Forgetting by policy (docs/ARCHITECTURE.md, "Forgetting by policy"), written once for both engines over the port.
 * A store's policy per kind (memory, learning, trace, thought) names its rules: ttl (age since written or last used),
 * a size cap (keep the newest N), unused (never recalled or rated, older than D days) and, for memories, their
 * `expires_at`. A run reads what the rules match (a dry run stops there) and a real run retires those items through
 * item_state: the item's own rows stay, so the items routes' restore returns it as it was.
 *
 * Protected, never forgotten: an item tagged `pinned` (memories and thoughts carry tags), an id in the policy's
 * protected_ids, and an item a person restored after a run retired it (forget_retired remembers it: a restore is a
 * decision to keep the item, which the next run must not undo). Items not active (retired by hand, superseded) are
 * not candidates: a rerun retires nothing new.
 */
export type ForgetKind = (typeof FORGET_KINDS)[number];
export { FORGET_KINDS };
export const FORGET_RULES = ["expires_at", "ttl", "unused", "cap"] as const;
export type ForgetRule = (typeof FORGET_RULES)[number];

/** The tag that protects a memory or thought from every rule. */
export const PROTECT_TAG = "pinned";

const DAY_MS = 86_400_000;

/** Bounds of a policy and of one run (SECURITY.md, "Limits"). */
export const FORGET_LIMITS = {
  /** Items one run retires at most: the answer says how many remain for the next call. */
  maxPerRun: 500,
  /** The per-call limit when the caller names none. */
  defaultPerRun: 100,
  /** Items retired per store transaction; the event loop is given back between batches. */
  batchSize: 50,
  /** Candidates read per rule and kind; past it, `remaining` is a lower bound. */
  maxScan: 5000,
  /** Ids in one policy's protected_ids. */
  maxProtectedIds: 1000,
  /** ttl_days and unused_days: at most a century. */
  maxDays: 36_500,
  /** max_items: the largest cap a policy may set. */
  maxCap: 10_000_000,
  /** Runs kept in the store's list of runs (the oldest go first; the ledger keeps every run). */
  runsKept: 200,
  /** Rows one listing (runs, forgotten items) answers. */
  maxListed: 200,
} as const;

const days = (field: string) =>
  z
    .number()
    .min(0, { message: `${field}: 0 or more days` })
    .max(FORGET_LIMITS.maxDays, { message: `${field}: at most ${FORGET_LIMITS.maxDays} days (maxDays)` })
    .nullable()
    .optional();

/** One kind's policy as a caller sets it; a rule left out (or null) is off. */
export const kindPolicySchema = z
  .object({
    ttl_days: days("ttl_days"),
    ttl_since: z.enum(["written", "used"]).optional(),
    max_items: z.number().int().min(0).max(FORGET_LIMITS.maxCap, { message: `max_items: at most ${FORGET_LIMITS.maxCap} (maxCap)` }).nullable().optional(),
    unused_days: days("unused_days"),
    honour_expires_at: z.boolean().optional(),
    protected_ids: z.array(itemIdSchema).max(FORGET_LIMITS.maxProtectedIds, { message: `protected_ids: at most ${FORGET_LIMITS.maxProtectedIds} ids (maxProtectedIds)` }).optional(),
  })
  .strict();
export type KindPolicyInput = z.infer<typeof kindPolicySchema>;

/** PUT …/policy/forget: a policy per kind (null removes that kind's policy; a kind left out is unchanged). */
export const forgetPolicyInputSchema = z
  .object({ policies: z.object(Object.fromEntries(FORGET_KINDS.map((k) => [k, kindPolicySchema.nullable().optional()])) as Record<ForgetKind, z.ZodOptional<z.ZodNullable<typeof kindPolicySchema>>>).strict() })
  .strict()
  .superRefine((v, ctx) => {
    for (const [kind, p] of Object.entries(v.policies) as [ForgetKind, KindPolicyInput | null | undefined][]) {
      if (!p) continue;
      if (p.honour_expires_at && kind !== "memory") ctx.addIssue({ code: "custom", path: ["policies", kind, "honour_expires_at"], message: "honour_expires_at: only memories carry expires_at" });
      if (p.unused_days != null && kind === "memory") ctx.addIssue({ code: "custom", path: ["policies", kind, "unused_days"], message: "unused_days: memories record no recall of their own (use ttl_since: used)" });
    }
  });

/** POST …/policy/forget/run: a dry run by default; `limit` bounds the items one call retires. */
export const forgetRunInputSchema = z
  .object({
    dry_run: z.boolean().optional(),
    limit: z.number().int().min(1).max(FORGET_LIMITS.maxPerRun, { message: `limit: at most ${FORGET_LIMITS.maxPerRun} items per run (maxPerRun)` }).optional(),
  })
  .strict();

/** One kind's policy as stored and answered. */
export type KindPolicy = { kind: ForgetKind; ttl_days: number | null; ttl_since: "written" | "used"; max_items: number | null; unused_days: number | null; honour_expires_at: boolean; protected_ids: string[]; updated_at: number; updated_by: string };

export const forgetPolicyTable = tablePair(sqliteIndex.forgetPolicy, pg.forgetPolicy);
export const forgetRunTable = tablePair(sqliteIndex.forgetRun, pg.forgetRun);
export const forgetRetiredTable = tablePair(sqliteIndex.forgetRetired, pg.forgetRetired);

function parseJson<T>(text: string, fallback: T): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

function policyOf(r: ForgetPolicyRow): KindPolicy {
  return { kind: r.kind, ttl_days: r.ttlDays, ttl_since: r.ttlSince, max_items: r.maxItems, unused_days: r.unusedDays, honour_expires_at: r.honourExpiresAt, protected_ids: parseJson<string[]>(r.protectedIds, []), updated_at: r.updatedAt, updated_by: r.updatedBy };
}

/** A kind's policy retires nothing when none of its rules is on. */
const anyRule = (p: KindPolicy) => p.ttl_days !== null || p.max_items !== null || p.unused_days !== null || p.honour_expires_at;

function* policiesOp(): Op<KindPolicy[]> {
  const found = yield* rows(forgetPolicyTable, { orderBy: (t) => [asc(t.kind)] });
  return found.map(policyOf).sort((a, b) => FORGET_KINDS.indexOf(a.kind) - FORGET_KINDS.indexOf(b.kind));
}

/** The store's policies, one per kind that has one. */
export function forgetPolicies({ handle }: { handle: AnyStoreHandle }): Promise<KindPolicy[]> {
  return Promise.resolve(read(handle, policiesOp()));
}

/**
 * Set the policies named in `input` (null removes one), in one store write with its audit entry and ledger row;
 * answers every policy the store now has.
 */
export function setForgetPolicies({ handle, store, input, actor, ledger, now = Date.now() }: { handle: AnyStoreHandle; store: string; input: z.input<typeof forgetPolicyInputSchema>; actor: string; ledger: LedgerWho; now?: number }): Promise<{ policies: KindPolicy[]; override_id: string }> {
  const { policies } = forgetPolicyInputSchema.parse(input);
  return Promise.resolve(
    write(handle, function* () {
      for (const [kind, p] of Object.entries(policies) as [ForgetKind, KindPolicyInput | null | undefined][]) {
        if (p === undefined) continue;
        if (p === null) {
          yield* remove(forgetPolicyTable, (t) => eq(t.kind, kind));
          continue;
        }
        const values = {
          ttlDays: p.ttl_days ?? null,
          ttlSince: p.ttl_since ?? "written",
          maxItems: p.max_items ?? null,
          unusedDays: p.unused_days ?? null,
          honourExpiresAt: p.honour_expires_at ?? false,
          protectedIds: JSON.stringify([...new Set(p.protected_ids ?? [])]),
          updatedAt: now,
          updatedBy: actor,
        };
        yield* upsert(forgetPolicyTable, { kind, ...values }, (t) => t.kind, values);
      }
      const after = yield* policiesOp();
      yield* auditStep({ actor, action: "forget.policy", target: `forget:${store}`, reason: `forgetting policy of store ${store} set`, details: { store, policies } });
      const override_id = yield* ledgerOverrideStep({ note: `forget.policy store ${store}: ${Object.keys(policies).join(", ") || "no kind"} set`, actor, ...ledger });
      return { policies: after, override_id };
    }),
  );
}

/** One item a run retires (or, dry, would): which rule and why. */
export type ForgetCandidate = { kind: ForgetKind; id: string; title: string; rule: ForgetRule; why: string };

/** Each kind's table, its id, the times the rules read and what "never used" means for it. */
type KindSpec = {
  table: TablePair;
  id: (t: any) => SQLWrapper; // eslint-disable-line @typescript-eslint/no-explicit-any -- each kind's own table
  idOf: (r: any) => string; // eslint-disable-line @typescript-eslint/no-explicit-any
  written: (t: any) => SQLWrapper; // eslint-disable-line @typescript-eslint/no-explicit-any
  used: (t: any) => SQLWrapper; // eslint-disable-line @typescript-eslint/no-explicit-any
  timeOf: (r: any, since: "written" | "used") => number; // eslint-disable-line @typescript-eslint/no-explicit-any
  titleOf: (r: any) => string; // eslint-disable-line @typescript-eslint/no-explicit-any
  tagsOf?: (r: any) => string[]; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Never recalled, rated or seen again. */
  unused?: (t: any) => SQL; // eslint-disable-line @typescript-eslint/no-explicit-any
};

const tagList = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : typeof v === "string" ? parseJson<unknown>(v, []) as string[] : []);
const excerpt = (s: string) => (s.length > 160 ? `${s.slice(0, 157)}…` : s);
/** Never recalled: no recall answered with it (recall_event_hits), read once as an uncorrelated subquery. */
const neverRecalled = (artifact: "trace" | "learning") => (t: { id: SQLWrapper; seenCount: SQLWrapper }) => sql`${t.seenCount} = 1 and ${t.id} not in (select h.ref_id from recall_event_hits h where h.artifact = ${artifact})`;

const KINDS: Record<ForgetKind, KindSpec> = {
  memory: {
    table: tablePair(sqliteIndex.memories, pg.memories),
    id: (t) => t.path,
    idOf: (r) => r.path,
    written: (t) => t.createdAt,
    used: (t) => t.updatedAt,
    timeOf: (r, since) => (since === "written" ? r.createdAt : r.updatedAt),
    titleOf: (r) => excerpt(r.summary ? `${r.path}: ${r.summary}` : r.path),
    tagsOf: (r) => tagList(r.tags),
  },
  learning: {
    table: tablePair(sqliteRecall.learnings, pg.learnings),
    id: (t) => t.id,
    idOf: (r) => String(r.id),
    written: (t) => t.createdAt,
    used: (t) => t.lastSeenAt,
    timeOf: (r, since) => (since === "written" ? r.createdAt : r.lastSeenAt),
    titleOf: (r) => excerpt(`${r.predicate}: ${r.description}`),
    unused: neverRecalled("learning"),
  },
  trace: {
    table: tablePair(sqliteRecall.reasoningTraces, pg.reasoningTraces),
    id: (t) => t.id,
    idOf: (r) => String(r.id),
    written: (t) => t.createdAt,
    used: (t) => t.lastSeenAt,
    timeOf: (r, since) => (since === "written" ? r.createdAt : r.lastSeenAt),
    titleOf: (r) => excerpt(r.summaryDescriptor),
    unused: neverRecalled("trace"),
  },
  thought: {
    table: tablePair(sqliteGraph.thoughts, pg.thoughts),
    id: (t) => t.id,
    idOf: (r) => r.id,
    written: (t) => t.timestamp,
    used: (t) => t.timestamp,
    timeOf: (r) => r.timestamp,
    titleOf: (r) => excerpt(r.content),
    tagsOf: (r) => tagList(r.tags),
    unused: (t) => sql`${t.feedbackCount} = 0`,
  },
};

const ageDays = (now: number, t: number) => `${Math.floor((now - t) / DAY_MS)} days`;

/** Candidates of one kind under its policy: first rule wins; protected and exempt items left out. */
function* kindCandidatesOp({ policy, now }: { policy: KindPolicy; now: number }): Op<{ items: ForgetCandidate[]; capped: boolean }> {
  const spec = KINDS[policy.kind];
  const kind = policy.kind;
  const protectedIds = new Set(policy.protected_ids);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind's own table
  const eligible = (t: any, extra: SQL | undefined) => and(visibleWhere({ kind, id: spec.id(t) }), sql`cast(${spec.id(t)} as text) not in (select fr.item_id from forget_retired fr where fr.kind = ${kind})`, extra);
  const keep = (r: unknown) => !protectedIds.has(spec.idOf(r)) && !(spec.tagsOf?.(r) ?? []).includes(PROTECT_TAG);
  const seen = new Set<string>();
  const items: ForgetCandidate[] = [];
  let capped = false;
  const take = (found: unknown[], rule: ForgetRule, why: (r: unknown) => string) => {
    if (found.length >= FORGET_LIMITS.maxScan) capped = true;
    for (const r of found) {
      const id = spec.idOf(r);
      if (seen.has(id) || !keep(r)) continue;
      seen.add(id);
      items.push({ kind, id, title: spec.titleOf(r), rule, why: why(r) });
    }
  };
  const oldest = (basis: (t: never) => SQLWrapper) => (t: never) => [asc(basis(t) as never), asc(spec.id(t) as never)];
  if (policy.honour_expires_at && kind === "memory") {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- memories on either engine
    const found = yield* rows(spec.table, { where: (t: any) => eligible(t, and(isNotNull(t.expiresAt), lte(t.expiresAt, now))), orderBy: (t: any) => [asc(t.expiresAt), asc(t.path)], limit: FORGET_LIMITS.maxScan });
    take(found, "expires_at", (r) => `expired ${ageDays(now, (r as { expiresAt: number }).expiresAt)} ago (expires_at)`);
  }
  if (policy.ttl_days !== null) {
    const basis = policy.ttl_since === "written" ? spec.written : spec.used;
    const cutoff = Math.floor(now - policy.ttl_days * DAY_MS);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind's own table
    const found = yield* rows(spec.table, { where: (t: any) => eligible(t, sql`${basis(t)} < ${cutoff}`), orderBy: oldest(basis) as never, limit: FORGET_LIMITS.maxScan });
    take(found, "ttl", (r) => `${policy.ttl_since === "written" ? "written" : "last used"} ${ageDays(now, spec.timeOf(r, policy.ttl_since))} ago (ttl ${policy.ttl_days} days)`);
  }
  if (policy.unused_days !== null && spec.unused) {
    const cutoff = Math.floor(now - policy.unused_days * DAY_MS);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind's own table
    const found = yield* rows(spec.table, { where: (t: any) => eligible(t, and(sql`${spec.written(t)} < ${cutoff}`, spec.unused!(t))), orderBy: oldest(spec.written) as never, limit: FORGET_LIMITS.maxScan });
    take(found, "unused", (r) => `never recalled or rated, written ${ageDays(now, spec.timeOf(r, "written"))} ago (unused ${policy.unused_days} days)`);
  }
  if (policy.max_items !== null) {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind's own table
    const found = yield* rows(spec.table, { where: (t: any) => eligible(t, undefined), orderBy: (t: any) => [desc(spec.used(t) as never), desc(spec.id(t) as never)], offset: policy.max_items, limit: FORGET_LIMITS.maxScan });
    take([...found].reverse(), "cap", () => `past the newest ${policy.max_items} (cap)`);
  }
  return { items, capped };
}

/** Every candidate of the store's policies, in the order a run retires them (kind, rule, oldest first). */
function* candidatesOp({ now }: { now: number }): Op<{ items: ForgetCandidate[]; capped: boolean; policies: KindPolicy[] }> {
  const policies = (yield* policiesOp()).filter(anyRule);
  const items: ForgetCandidate[] = [];
  let capped = false;
  for (const policy of policies) {
    const of = yield* kindCandidatesOp({ policy, now });
    items.push(...of.items);
    capped ||= of.capped;
  }
  return { items, capped, policies };
}

/** A run's answer: what it retired (or, dry, would), counts per rule, and how many remain past its limit. */
export type ForgetRunResult = { run_id: string; dry_run: boolean; at: number; actor: string; limit: number; items: ForgetCandidate[]; counts: Partial<Record<ForgetRule, number>>; retired: number; remaining: number; remaining_exact: boolean; ids_sha256: string };

const countsOf = (items: ForgetCandidate[]) => items.reduce<Partial<Record<ForgetRule, number>>>((c, i) => ({ ...c, [i.rule]: (c[i.rule] ?? 0) + 1 }), {});
const digestOf = (items: ForgetCandidate[]) => sha256Hex(items.map((i) => `${i.kind}/${i.id}\n`).join(""));
const yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

let runSeq = 0;
/** A run's id sorts by when it was made (wall clock, then this process's counter): runs at one injected `now` still list newest first. */
const newRunId = () => `fr_${Date.now().toString(36).padStart(9, "0")}${(runSeq++ % 1_679_616).toString(36).padStart(4, "0")}_${randomUUID().slice(0, 8)}`;

/** The decided_by of a policy's retirement. */
export const policyActor = (kind: ForgetKind) => `policy:forget-${kind}`;

/**
 * One run of the store's policies at `now`. A dry run reads the candidates and records the run with its ledger row.
 * A real run retires the first `limit` of the same list, `batchSize` items per store transaction, the event loop
 * given back between them; each batch's transaction first checks the ledger has room for its rows (ledgerRoomStep:
 * an agent's run against a full ledger is refused, 507, before it retires anything), then retires its items and
 * records the run so far with them: the run's row, one ledger row and one audit entry (its counts and the digest of
 * the items retired so far). So every item retired is in the ledger whatever becomes of the batches after it (a
 * refused or failed later batch leaves the run recorded as far as it went), and the last batch's rows are the whole
 * run's: the chain grows by one entry per batch, not per item; each item's own history names the run. An item
 * decided meanwhile (by hand, or a concurrent run) is skipped, so two runs never retire one item twice.
 */
export async function runForgetting({ handle, store, actor, ledger, dryRun = true, limit = FORGET_LIMITS.defaultPerRun, now = Date.now() }: { handle: AnyStoreHandle; store: string; actor: string; ledger: LedgerWho; dryRun?: boolean; limit?: number; now?: number }): Promise<ForgetRunResult & { override_id: string }> {
  const { limit: bounded } = forgetRunInputSchema.parse({ limit });
  const per = bounded ?? FORGET_LIMITS.defaultPerRun;
  const found = await Promise.resolve(read(handle, candidatesOp({ now })));
  const chosen = found.items.slice(0, per);
  const runId = newRunId();
  /** The run's answer once `processed` of the chosen items were gone through (all of them: the whole run's). */
  const resultOf = (items: ForgetCandidate[], processed = chosen.length): ForgetRunResult => ({
    run_id: runId,
    dry_run: dryRun,
    at: now,
    actor,
    limit: per,
    items,
    counts: countsOf(items),
    retired: items.length,
    remaining: found.items.length - processed,
    remaining_exact: !found.capped,
    ids_sha256: digestOf(items),
  });
  const record = { store, actor, ledger, now };
  if (dryRun) {
    const result = resultOf(chosen);
    return { ...result, override_id: await Promise.resolve(write(handle, recordRunOp({ ...record, result, batch: null }))) };
  }
  // A run that finds nothing is one empty batch: it is recorded too.
  const batches = chosen.length === 0 ? [[]] : Array.from({ length: Math.ceil(chosen.length / FORGET_LIMITS.batchSize) }, (_, i) => chosen.slice(i * FORGET_LIMITS.batchSize, (i + 1) * FORGET_LIMITS.batchSize));
  const retired: ForgetCandidate[] = [];
  let override_id = "";
  for (const [i, batch] of batches.entries()) {
    if (i > 0) await yieldLoop();
    const done = await Promise.resolve(
      write(handle, function* () {
        yield* ledgerRoomStep({ actor, caller: ledger.caller });
        const out: ForgetCandidate[] = [];
        for (const c of batch) {
          const reason = `forgotten: ${c.rule}: ${c.why}; run ${runId} by ${actor}`;
          if (!(yield* retireByPolicyOp({ kind: c.kind, id: c.id, reason, actor: policyActor(c.kind), now }))) continue;
          yield* insert(forgetRetiredTable, { kind: c.kind, itemId: c.id, runId, rule: c.rule, why: c.why, title: c.title, at: now });
          out.push(c);
        }
        const result = resultOf([...retired, ...out], Math.min(chosen.length, (i + 1) * FORGET_LIMITS.batchSize));
        const id = yield* recordRunOp({ ...record, result, batch: batches.length > 1 ? { index: i + 1, of: batches.length, retired: out.length } : null });
        return { out, id };
      }),
    );
    retired.push(...done.out);
    override_id = done.id;
  }
  return { ...resultOf(retired), override_id };
}

/**
 * The run as far as it went (`result`): its row in the store's list of runs (written by its first write, updated by
 * each batch after), and, for a real run, an audit entry, then its ledger row; answers the ledger row's id.
 */
function* recordRunOp({ store, actor, ledger, now, result, batch }: { store: string; actor: string; ledger: LedgerWho; now: number; result: ForgetRunResult; batch: { index: number; of: number; retired: number } | null }): Op<string> {
  const values = { counts: JSON.stringify(result.counts), retired: result.retired, remaining: result.remaining, idsSha256: result.ids_sha256 };
  if ((batch?.index ?? 1) === 1) {
    const old = yield* rows(forgetRunTable, { orderBy: (t) => [desc(t.at), desc(t.id)], offset: FORGET_LIMITS.runsKept - 1, limit: 100 });
    for (const r of old) yield* remove(forgetRunTable, (t) => eq(t.id, r.id));
    yield* insert(forgetRunTable, { id: result.run_id, at: now, actor, dryRun: result.dry_run, maxItems: result.limit, ...values });
  } else {
    yield* update(forgetRunTable, values, (t) => eq(t.id, result.run_id));
  }
  const part = batch ? ` batch ${batch.index}/${batch.of} (${batch.retired} retired in it)` : "";
  if (!result.dry_run) yield* auditStep({ actor, action: "forget.run", target: `forget:${store}`, reason: `forgetting policy run ${result.run_id}${part}: ${result.retired} item(s) retired`, details: { store, run_id: result.run_id, ...(batch ? { batch } : {}), counts: result.counts, retired: result.retired, remaining: result.remaining, ids_sha256: result.ids_sha256 } });
  const rules = Object.entries(result.counts).map(([rule, n]) => `${rule}=${n}`).join(" ") || "nothing";
  return yield* ledgerOverrideStep({ note: `forget.run ${result.dry_run ? "dry" : "real"} store ${store} run ${result.run_id}${part}: ${rules}; ${result.remaining} remaining`, actor, ...ledger });
}

/** A run as the runs list answers it. */
export type ForgetRunSummary = { run_id: string; at: number; actor: string; dry_run: boolean; limit: number; counts: Partial<Record<ForgetRule, number>>; retired: number; remaining: number; ids_sha256: string };

const runOf = (r: ForgetRunRow): ForgetRunSummary => ({ run_id: r.id, at: r.at, actor: r.actor, dry_run: r.dryRun, limit: r.maxItems, counts: parseJson(r.counts, {}), retired: r.retired, remaining: r.remaining, ids_sha256: r.idsSha256 });

/** The store's runs, newest first. */
export function forgetRuns({ handle, limit = 50 }: { handle: AnyStoreHandle; limit?: number }): Promise<ForgetRunSummary[]> {
  return Promise.resolve(read(handle, function* () {
    return (yield* rows(forgetRunTable, { orderBy: (t) => [desc(t.at), desc(t.id)], limit: Math.min(limit, FORGET_LIMITS.maxListed) })).map(runOf);
  }));
}

/** An item a run retired, still retired (a restored one leaves this list). */
export type ForgottenItem = { kind: ForgetKind; id: string; title: string; rule: string; why: string; run_id: string; at: number };

/** The items policy runs retired that are still retired, newest first. */
export function forgottenItems({ handle, limit = 100 }: { handle: AnyStoreHandle; limit?: number }): Promise<ForgottenItem[]> {
  return Promise.resolve(read(handle, function* () {
    const states = yield* rows(itemStateTable, { where: (t) => and(inArray(t.kind, [...FORGET_KINDS]), eq(t.status, "retired"), like(t.reason, "forgotten:%")), orderBy: (t) => [desc(t.retiredAt), asc(t.kind), asc(t.itemId)], limit: Math.min(limit, FORGET_LIMITS.maxListed) });
    if (states.length === 0) return [];
    const found: ForgetRetiredRow[] = yield* rows(forgetRetiredTable, { where: (t) => or(...states.map((s) => and(eq(t.kind, s.kind as ForgetKind), eq(t.itemId, s.itemId)))) });
    const latest = new Map<string, ForgetRetiredRow>();
    for (const r of found) {
      const key = `${r.kind}/${r.itemId}`;
      if ((latest.get(key)?.at ?? -1) < r.at) latest.set(key, r);
    }
    return states.flatMap((s) => {
      const r = latest.get(`${s.kind}/${s.itemId}`);
      return r ? [{ kind: r.kind, id: r.itemId, title: r.title, rule: r.rule, why: r.why, run_id: r.runId, at: r.at }] : [];
    });
  }));
}
