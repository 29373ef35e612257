import { beforeEach, describe, expect, it } from "vitest";
import * as policyRoute from "@/app/api/v1/stores/[store]/policy/write/route";
import * as forgetPolicyRoute from "@/app/api/v1/stores/[store]/policy/forget/route";
import * as forgetRunRoute from "@/app/api/v1/stores/[store]/policy/forget/run/route";
import * as forgetRunsRoute from "@/app/api/v1/stores/[store]/policy/forget/runs/route";
import * as proposalsRoute from "@/app/api/v1/stores/[store]/proposals/route";
import * as approveRoute from "@/app/api/v1/stores/[store]/proposals/[kind]/[id]/approve/route";
import * as memoriesRoute from "@/app/api/v1/stores/[store]/memories/route";
import * as trashRoute from "@/app/api/v1/stores/[store]/memories/trash/route";
import * as contradictionsRoute from "@/app/api/v1/stores/[store]/contradictions/route";
import * as historyRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/history/route";
import * as invalidateRoute from "@/app/api/v1/stores/[store]/items/[kind]/[id]/invalidate/route";
import { callRoute } from "./helpers";
import { governanceSql, onPg, storeSql } from "./backend";
import { KB as P, REVIEW_AGENTS, ledgerRefuses, useGovernedStore } from "./governed-store";

/**
 * Governed memory's decisions are all or nothing: a create that supersedes or states a fact, an item or proposal
 * decision, a policy change and a forgetting run commit with their ledger rows or not at all; a deleted memory's
 * contradictions go with it (kept with its trash entry, back on restore, dropped by a purge). The ledger is made to
 * refuse one row (a trigger on its overrides table, on either engine) where a crash or a full ledger would.
 */
const kb = useGovernedStore({ tokens: REVIEW_AGENTS });
let admin: string;
let writer: string;
let trusted: string;
let read: string;
beforeEach(() => void ({ admin, writer, trusted, read } = kb));

type Answer = { status: number; json: Record<string, unknown> & { error?: { code: string; message: string } } };
const at = (p: string, q: Record<string, string> = {}) => `http://127.0.0.1/api/v1/stores/kb/${p}?${new URLSearchParams(q)}`;

const ledgerNotes = async (prefix: string) => (await governanceSql<{ note: string }>("select note from overrides where note like ?", [`${prefix}%`])).map((r) => r.note);

const writeMemory = (token: string, p: string, body: string, extra: Record<string, unknown> = {}): Promise<Answer> => callRoute(memoriesRoute.POST, { token, params: P, body: { path: p, body, ...extra } });
const listed = async () => ((await callRoute(memoriesRoute.GET, { token: read, params: P, url: at("memories") })).json.memories as { path: string }[]).map((m) => m.path).sort();
const statusOf = async (kind: string, id: string) => ((await callRoute(historyRoute.GET, { token: read, params: { ...P, kind, id } })).json.state as { status: string } | undefined)?.status;
const review = (token = admin) => callRoute(policyRoute.PUT, { method: "PUT", token, params: P, body: { modes: { memory: "review" }, trusted: ["librarian"] } });
const contradictions = async () => ((await callRoute(contradictionsRoute.GET, { token: read, params: P, url: at("contradictions") })).json.contradictions as { id: string; other_id: string }[]).map((c) => [c.id, c.other_id]);
const flagsOf = async (p: string) => {
  const got = await callRoute(memoriesRoute.GET, { token: read, params: P, url: at("memories", { path: p }) });
  return (((got.json.memory ?? got.json) as { flags: { flag: string; other_id?: string }[] }).flags ?? []).filter((f) => f.flag === "contradiction").map((f) => f.other_id);
};

describe("governed memory: a decision commits with its ledger row or not at all", () => {
  it("a create naming supersedes whose ledger row is refused supersedes nothing: the old memory stays active, the new one is not written (open store)", async () => {
    expect((await writeMemory(writer, "notes/home-1", "Caroline lives in Boston.")).status).toBe(201);
    await ledgerRefuses("item.supersede%");
    const refused = await writeMemory(writer, "notes/home-2", "Caroline lives in Sweden.", { supersedes: "notes/home-1" });
    expect(refused.status).toBeGreaterThanOrEqual(500);
    expect(await statusOf("memory", "notes/home-1")).toBe("active");
    expect(await listed()).toEqual(["notes/home-1"]);
  });

  it("a trusted agent's create under review that supersedes, whose bypass row is refused, leaves nothing: the policy read, the write, the supersession and its rows are one transaction", async () => {
    expect((await review()).status).toBe(200);
    expect((await writeMemory(trusted, "notes/home-1", "Caroline lives in Boston.")).status).toBe(201);
    await ledgerRefuses("write.bypass%");
    const refused = await writeMemory(trusted, "notes/home-2", "Caroline lives in Sweden.", { supersedes: "notes/home-1" });
    expect(refused.status).toBeGreaterThanOrEqual(500);
    expect(await statusOf("memory", "notes/home-1")).toBe("active");
    expect(await listed()).toEqual(["notes/home-1"]);
    // PostgreSQL holds the ledger in the same transaction. On SQLite the ledger is governance.db, written during the
    // store's write: a row before the refused one stays (a ledger row of a change that rolled back, never the reverse).
    if (onPg) expect(await ledgerNotes("item.supersede")).toEqual([]);
  });

  it("an invalidate whose ledger row is refused leaves the item active", async () => {
    expect((await writeMemory(writer, "notes/claim", "The harbour opens at six.")).status).toBe(201);
    await ledgerRefuses("item.invalidate%");
    const refused = await callRoute(invalidateRoute.POST, { token: writer, params: { ...P, kind: "memory", id: "notes/claim" }, body: { reason: "wrong hour" } });
    expect(refused.status).toBeGreaterThanOrEqual(500);
    expect(await statusOf("memory", "notes/claim")).toBe("active");
    expect(await listed()).toEqual(["notes/claim"]);
  });

  it("an approval whose ledger row is refused leaves the proposal waiting in the review queue", async () => {
    expect((await review()).status).toBe(200);
    expect(((await writeMemory(writer, "inbox/claim", "The ferry leaves at nine.")).json.proposal as { status: string }).status).toBe("proposed");
    await ledgerRefuses("proposal.approve%");
    const refused = await callRoute(approveRoute.POST, { token: trusted, params: { ...P, kind: "memory", id: "inbox/claim" }, body: {} });
    expect(refused.status).toBeGreaterThanOrEqual(500);
    expect(await statusOf("memory", "inbox/claim")).toBe("proposed");
    const queue = await callRoute(proposalsRoute.GET, { token: trusted, params: P, url: at("proposals") });
    expect((queue.json.proposals as { id: string }[]).map((p) => p.id)).toEqual(["inbox/claim"]);
  });

  it("a store's first policy change whose ledger row is refused changes nothing, not even who last set it", async () => {
    const before = (await callRoute(policyRoute.GET, { token: admin, params: P })).json;
    expect(before).toMatchObject({ updated_by: null, updated_at: null });
    await ledgerRefuses("write_policy.set%");
    expect((await review()).status).toBeGreaterThanOrEqual(500);
    expect((await callRoute(policyRoute.GET, { token: admin, params: P })).json).toEqual(before);
    // Writes still count at once: the store is as open as it was.
    expect((await writeMemory(writer, "notes/open", "Still open.")).json.proposal).toBeUndefined();
  });

  it("a forgetting policy and a run whose ledger rows are refused leave no policy and no run", async () => {
    await ledgerRefuses("forget.%");
    const set = await callRoute(forgetPolicyRoute.PUT, { method: "PUT", token: admin, params: P, body: { policies: { memory: { ttl_days: 30 } } } });
    expect(set.status).toBeGreaterThanOrEqual(500);
    expect((await callRoute(forgetPolicyRoute.GET, { token: admin, params: P })).json.policies).toEqual([]);
    const run = await callRoute(forgetRunRoute.POST, { token: admin, params: P, body: { dry_run: true } });
    expect(run.status).toBeGreaterThanOrEqual(500);
    expect((await callRoute(forgetRunsRoute.GET, { token: admin, params: P, url: at("policy/forget/runs") })).json.runs).toEqual([]);
  });
});

describe("governed memory: a deleted memory's contradictions go with it", () => {
  it("deleted, its contradiction flags and listing go; restored from the trash they are back; purged, its rows are gone", async () => {
    const fact = { subject: "Melanie", property: "city", valid_from: Date.UTC(2023, 4, 8) };
    expect((await writeMemory(writer, "people/melanie-a", "Melanie lives in Denver.", fact)).status).toBe(201);
    expect((await writeMemory(writer, "people/melanie-b", "Melanie lives in Austin.", fact)).status).toBe(201);
    expect(await contradictions()).toEqual([["people/melanie-a", "people/melanie-b"]]);
    expect(await flagsOf("people/melanie-a")).toEqual(["people/melanie-b"]);

    expect((await callRoute(memoriesRoute.DELETE, { method: "DELETE", token: writer, params: P, url: at("memories", { path: "people/melanie-b" }) })).status).toBeLessThan(300);
    expect(await contradictions()).toEqual([]);
    expect(await flagsOf("people/melanie-a")).toEqual([]);

    const [entry] = (await callRoute(trashRoute.GET, { token: read, params: P, url: at("memories/trash") })).json.trash as { id: string }[];
    expect((await callRoute(trashRoute.POST, { token: writer, params: P, body: { id: entry.id } })).status).toBeLessThan(300);
    expect(await contradictions()).toEqual([["people/melanie-a", "people/melanie-b"]]);
    expect(await flagsOf("people/melanie-a")).toEqual(["people/melanie-b"]);

    expect((await callRoute(memoriesRoute.DELETE, { method: "DELETE", token: writer, params: P, url: at("memories", { path: "people/melanie-b" }) })).status).toBeLessThan(300);
    const [again] = (await callRoute(trashRoute.GET, { token: read, params: P, url: at("memories/trash") })).json.trash as { id: string }[];
    expect((await callRoute(trashRoute.DELETE, { method: "DELETE", token: admin, params: P, url: at("memories/trash", { id: again.id }) })).status).toBeLessThan(300);
    expect(await storeSql("kb", "select item_id, other_id from item_contradictions")).toEqual([]);
    expect(await flagsOf("people/melanie-a")).toEqual([]);
  });
});
