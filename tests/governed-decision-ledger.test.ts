import { describe, expect, it } from "vitest";
import * as policyRoute from "@/app/api/v1/stores/[store]/policy/write/route";
import * as forgetPolicyRoute from "@/app/api/v1/stores/[store]/policy/forget/route";
import * as forgetRunRoute from "@/app/api/v1/stores/[store]/policy/forget/run/route";
import * as forgetRunsRoute from "@/app/api/v1/stores/[store]/policy/forget/runs/route";
import * as proposalsRoute from "@/app/api/v1/stores/[store]/proposals/route";
import * as approveRoute from "@/app/api/v1/stores/[store]/proposals/[kind]/[id]/approve/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as nodesRoute from "@/app/api/v1/stores/[store]/nodes/route";
import * as searchRoute from "@/app/api/v1/stores/[store]/search/route";
import * as learningsRoute from "@/app/api/v1/stores/[store]/learnings/route";
import * as recallRoute from "@/app/api/v1/stores/[store]/recall/route";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as historyRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/history/route";
import { runForgettingIn } from "@/lib/api/forgetting";
import { resetConfigForTests } from "@/lib/config";
import { FORGET_LIMITS } from "@/lib/index/forgetting";
import { stores, storeEngineOf } from "@/lib/stores/backend";
import { currentEngine } from "@/lib/db/engine";
import { decideProposal } from "@/lib/index/proposals";
import { ledgerWho } from "@/lib/api/items";
import { callRoute } from "./helpers";
import { governanceSql, onPg, principalOf, storeSql } from "./backend";
import { DAY, KB as P, REVIEW_AGENTS, ledgerRefuses, useGovernedStore } from "./governed-store";

/**
 * Two decisions made of several writes keep the store and the ledger agreeing: a forgetting run retires nothing
 * while the ledger has no room for its rows, and what a run did retire is in the ledger whatever becomes of its later
 * batches; an edit-then-approve is one unit, so an approval refused (the ledger full, its row refused) leaves the
 * proposal as it was proposed, and one that goes through names the edit in its ledger row and audit entry.
 */
const kb = useGovernedStore({ tokens: REVIEW_AGENTS, unset: ["DUALMIND_GOVERNANCE_MAX_BYTES"] });

type Answer = { status: number; json: Record<string, unknown> & { error?: { code: string; details?: { limit?: string }[] } } };
const at = (p: string, q: Record<string, string> = {}) => `http://127.0.0.1/api/v1/stores/kb/${p}?${new URLSearchParams(q)}`;
const ok = (r: Answer, status = 200) => {
  expect(r.status, JSON.stringify(r.json)).toBe(status);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  return r.json as any;
};
const limitOf = (r: Answer) => r.json.error?.details?.[0]?.limit;

/**
 * Rows the ledger holds past DUALMIND_GOVERNANCE_MAX_BYTES's smallest value (1 MiB), in a table of its own: made
 * before the suite's writes, so every measure of the ledger they take already counts them.
 */
async function ledgerBallast(): Promise<void> {
  if (onPg) {
    await governanceSql("create table ballast (b text)");
    await governanceSql("insert into ballast select md5(random()::text) || md5(random()::text) from generate_series(1, 40000)");
  } else {
    await governanceSql("create table ballast (b blob)");
    await governanceSql("insert into ballast with recursive n(i) as (select 1 union all select i + 1 from n where i < 600) select randomblob(4096) from n");
  }
}
/** The ledger is full from here on: its most set below what it holds. */
function ledgerFull(): void {
  process.env.DUALMIND_GOVERNANCE_MAX_BYTES = String(1024 * 1024);
  resetConfigForTests();
}
function ledgerRoomAgain(): void {
  delete process.env.DUALMIND_GOVERNANCE_MAX_BYTES;
  resetConfigForTests();
}

const searched = async (q: string) => ok(await callRoute(searchRoute.POST, { token: kb.read, params: P, body: { q, mode: "fts" } })).results.map((h: { path: string }) => h.path);
const recalled = async (query: string) => ok(await callRoute(recallRoute.POST, { token: kb.read, params: P, body: { query, signals: "lexical", min_score: 0 } })).learnings.map((l: { id: number }) => String(l.id));
const statusOf = async (kind: string, id: string) => ok(await callRoute(historyRoute.GET, { token: kb.read, params: { ...P, kind, id } })).state?.status as string | undefined;
const queued = async () => ok(await callRoute(proposalsRoute.GET, { token: kb.trusted, params: P, url: at("proposals") })).proposals.map((p: { id: string }) => p.id);
const forgetRuns = async () => ok(await callRoute(forgetRunsRoute.GET, { token: kb.admin, params: P, url: at("policy/forget/runs") }));
const retiredCount = async () => Number((await storeSql<{ n: number | string }>("kb", "select count(*) as n from item_state where status = 'retired'"))[0].n);

describe("forgetting by policy and the ledger", () => {
  it("a real run against a full ledger answers 507 and retires nothing; with room again it retires what its dry run listed", async () => {
    await ledgerBallast();
    ok(await callRoute(memoriesRoute.POST, { token: kb.writer, params: P, body: { path: "notes/harbour", body: "The harbour master keeps the tide tables." } }), 201);
    const learning = ok(await callRoute(learningsRoute.POST, { token: kb.writer, params: P, body: { predicate: "check_tide_tables", description: "check the tide tables before sailing" } }), 201).learning;
    ok(await callRoute(forgetPolicyRoute.PUT, { method: "PUT", token: kb.admin, params: P, body: { policies: { memory: { ttl_days: 30 }, learning: { ttl_days: 30 } } } }));
    const later = Date.now() + 40 * DAY;
    const run = async (dryRun: boolean) => runForgettingIn({ store: "kb", dryRun, now: later, who: { principal: await principalOf(kb.admin) } });
    const dry = await run(true);
    expect(dry.items.map((i) => `${i.kind}:${i.id}`).sort()).toEqual([`learning:${learning.id}`, "memory:notes/harbour"]);

    ledgerFull();
    const refused = (await run(false).then(
      () => null,
      (e: { status?: number; code?: string; details?: { limit?: string }[] }) => e,
    ))!;
    expect(refused).toMatchObject({ code: "insufficient_storage", details: [{ limit: "DUALMIND_GOVERNANCE_MAX_BYTES" }] });
    // Through the route too, the same answer.
    const viaRoute = await callRoute(forgetRunRoute.POST, { token: kb.admin, params: P, body: { dry_run: false } });
    expect([viaRoute.status, limitOf(viaRoute)]).toEqual([507, "DUALMIND_GOVERNANCE_MAX_BYTES"]);
    // Nothing was retired: both still answer search and recall, and no run is listed.
    expect(await searched("harbour tide")).toEqual(["memory/notes/harbour.md"]);
    expect(await recalled("tide tables sailing")).toEqual([String(learning.id)]);
    expect(await retiredCount()).toBe(0);
    expect((await forgetRuns()).runs.filter((r: { dry_run: boolean }) => !r.dry_run)).toEqual([]);

    ledgerRoomAgain();
    const real = await run(false);
    expect(real.items.map((i) => `${i.kind}:${i.id}`)).toEqual(dry.items.map((i) => `${i.kind}:${i.id}`));
    expect(real.ids_sha256).toBe(dry.ids_sha256);
    expect(await searched("harbour tide")).toEqual([]);
    expect(await recalled("tide tables sailing")).toEqual([]);
  });

  it("a run whose last batch's ledger row is refused keeps every item it retired recorded: in the runs list, the ledger and the audit log, the rest still active", async () => {
    const t0 = Date.now();
    const total = FORGET_LIMITS.batchSize + 10;
    for (let n = 0; n < total; n++) ok(await callRoute(thoughtsRoute.POST, { token: kb.writer, params: P, body: { content: `tally mark number ${n}`, timestamp: t0 - (n + 1) * 1000 } }), 201);
    ok(await callRoute(forgetPolicyRoute.PUT, { method: "PUT", token: kb.admin, params: P, body: { policies: { thought: { ttl_days: 1 } } } }));
    // The row naming all of them (the whole run's counts) is refused.
    await ledgerRefuses(`forget.run real %ttl=${total};%`);
    await expect(runForgettingIn({ store: "kb", dryRun: false, now: t0 + 2 * DAY, who: { principal: await principalOf(kb.admin) } })).rejects.toThrow();

    const retired = await retiredCount();
    expect(retired).toBe(FORGET_LIMITS.batchSize);
    const [run] = (await forgetRuns()).runs;
    expect(run).toMatchObject({ dry_run: false, retired, counts: { ttl: retired } });
    const notes = (await governanceSql<{ note: string }>("select note from overrides where note like 'forget.run real%'")).map((r) => r.note);
    expect(notes).toEqual([`forget.run real store kb run ${run.run_id} batch 1/2 (${retired} retired in it): ttl=${retired}; 10 remaining`]);
    const audit = (await governanceSql<{ details: string }>("select details from audit_log where action = 'forget.run'")).map((r) => JSON.parse(r.details));
    expect(audit[0]).toEqual(expect.objectContaining({ run_id: run.run_id, retired, ids_sha256: run.ids_sha256, batch: { index: 1, of: 2, retired } }));
    // PostgreSQL holds the ledger in the batch's transaction. On SQLite the refused batch's audit entry, appended to
    // governance.db before its ledger row, stays (an entry of a change that rolled back, never the reverse).
    if (onPg) expect(audit).toHaveLength(1);
    const still = await storeSql<{ n: number | string }>("kb", "select count(*) as n from thoughts t where not exists (select 1 from item_state s where s.kind = 'thought' and s.item_id = t.id and s.status = 'retired')");
    expect(Number(still[0].n)).toBe(10);
  });
});

describe("edit-then-approve is one unit", () => {
  const review = () => callRoute(policyRoute.PUT, { method: "PUT", token: kb.admin, params: P, body: { modes: { memory: "review", node: "review" }, trusted: ["librarian"] } });

  it("against a full ledger it answers 507 and leaves the proposal's text as proposed, still waiting for review", async () => {
    await ledgerBallast();
    ok(await review());
    const node = ok(await callRoute(nodesRoute.POST, { token: kb.writer, params: P, body: { name: "harbour master", display_name: "Harbour Mastr", entity_type: "concept" } }), 201);
    expect(node.proposal?.status).toBe("proposed");
    const id = node.node.id as string;

    ledgerFull();
    const refused = await callRoute(approveRoute.POST, { token: kb.trusted, params: { ...P, kind: "node", id }, body: { edit: { display_name: "Harbour Master" }, reason: "typo" } });
    expect([refused.status, limitOf(refused)]).toEqual([507, "DUALMIND_GOVERNANCE_MAX_BYTES"]);
    expect(await storeSql("kb", "select display_name from kg_node where id = ?", [id])).toEqual([{ display_name: "Harbour Mastr" }]);
    expect(await statusOf("node", id)).toBe("proposed");
    expect(await queued()).toEqual([id]);
  });

  it("an approval whose ledger row is refused leaves the memory's text (its file on SQLite) as proposed", async () => {
    ok(await review());
    expect(ok(await callRoute(memoriesRoute.POST, { token: kb.writer, params: P, body: { path: "inbox/ferry", body: "The ferry leaves at nine." } }), 201).proposal?.status).toBe("proposed");
    await ledgerRefuses("proposal.approve%");
    const refused = await callRoute(approveRoute.POST, { token: kb.trusted, params: { ...P, kind: "memory", id: "inbox/ferry" }, body: { edit: { body: "The ferry leaves at ten." } } });
    expect(refused.status).toBeGreaterThanOrEqual(500);
    expect((await stores().getMemory({ store: "kb", memoryPath: "inbox/ferry" })).body.trim()).toBe("The ferry leaves at nine.");
    expect(await statusOf("memory", "inbox/ferry")).toBe("proposed");
    expect(await queued()).toEqual(["inbox/ferry"]);
  });

  it("an agent the store stopped trusting after the route's own check cannot decide: the decision's transaction reads the policy again", async () => {
    ok(await review());
    const id = ok(await callRoute(nodesRoute.POST, { token: kb.writer, params: P, body: { name: "pier lamp", entity_type: "concept" } }), 201).node.id as string;
    // The librarian's request passed the route's trust check; the store's policy then stopped trusting it.
    ok(await callRoute(policyRoute.PUT, { method: "PUT", token: kb.admin, params: P, body: { modes: { memory: "review", node: "review" }, trusted: [] } }));
    const handle = await storeEngineOf(currentEngine()).open("kb");
    const who = { principal: await principalOf(kb.trusted) };
    const decision = decideProposal({ handle, store: "kb", kind: "node", id, to: "active", reason: "looks right", actor: "agent:librarian", ledger: ledgerWho(who), trust: { tokenLabel: who.principal.label } });
    await expect(decision).rejects.toMatchObject({ code: "review_required" });
    expect(await statusOf("node", id)).toBe("proposed");
    expect(await queued()).toEqual([id]);
  });

  it("one that goes through has one ledger row and one audit entry naming the edit", async () => {
    ok(await review());
    ok(await callRoute(memoriesRoute.POST, { token: kb.writer, params: P, body: { path: "inbox/ferry", body: "The ferry leaves at nine." } }), 201);
    const approved = ok(await callRoute(approveRoute.POST, { token: kb.trusted, params: { ...P, kind: "memory", id: "inbox/ferry" }, body: { edit: { body: "The ferry leaves at ten.", summary: "ferry times" }, reason: "timetable changed" } }));
    expect(approved).toMatchObject({ status: "active", edited: true });
    expect((await stores().getMemory({ store: "kb", memoryPath: "inbox/ferry" })).body.trim()).toBe("The ferry leaves at ten.");
    expect(await searched("ferry ten")).toEqual(["memory/inbox/ferry.md"]);
    const notes = (await governanceSql<{ note: string; actor: string }>("select note, actor from overrides where note like 'proposal.approve%'"));
    expect(notes).toEqual([{ note: "proposal.approve (edited: body, summary) memory inbox/ferry in store kb: timetable changed", actor: "agent:librarian" }]);
    const audit = (await governanceSql<{ actor: string; details: string }>("select actor, details from audit_log where action = 'proposal.approve'")).map((r) => ({ actor: r.actor, details: JSON.parse(r.details) }));
    expect(audit).toEqual([{ actor: "agent:librarian", details: expect.objectContaining({ id: "inbox/ferry", edited: ["body", "summary"] }) }]);
  });
});
