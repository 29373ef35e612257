import { pgEngine, SQLITE_ENGINE } from "@/lib/db/engine";
import { afterEach, describe, expect, it } from "vitest";
import { governanceOn, type GovernanceBackend } from "@/lib/backend/governance";
import { checkTables, sqliteSide, type MigrateDataResult } from "@/lib/backend/migrate-data";
import { createUser, signInWithPassword } from "@/lib/backend/users";
import { closePg, getPg } from "@/lib/db/pg";
import type { CommandContext } from "@/scripts/cli-kit";
import { dbCommands } from "@/scripts/commands/db-commands";
import fs from "node:fs";
import path from "node:path";
import type { StoreCopyCheck } from "@/lib/stores/migrate-stores";
import { getStoreDb, storeDir } from "@/lib/db/connection";
import { graphBackend } from "@/lib/graph/backend";
import { createFrame } from "@/lib/graph/frames";
import { linkEvidence } from "@/lib/graph/evidence";
import { createNode } from "@/lib/graph/nodes";
import { createOrMergeRelation } from "@/lib/graph/relations";
import { thinkThought } from "@/lib/graph/thoughts";
import { setWorkingMemory } from "@/lib/graph/working-memory";
import { ingestDocument } from "@/lib/index/ingest";
import { recallBackend } from "@/lib/recall/backend";
import { getRecallEventById, listRecentRecallEvents, rateRecallHit } from "@/lib/recall/events";
import { recordLearning } from "@/lib/recall/learnings";
import { sqliteRecall } from "@/lib/recall/engines/sqlite";
import { recallReflections } from "@/lib/recall/recall";
import { updateReflectionSettings } from "@/lib/recall/settings";
import { recordTrace } from "@/lib/recall/traces";
import { putDocuments } from "@/lib/index/ingest";
import { createMemory, createMemorySchema, setCategoryDescription } from "@/lib/index/memories";
import { searchInputSchema } from "@/lib/index/search";
import { stores } from "@/lib/stores/backend";
import { createStore } from "@/lib/stores/stores";
import { useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

/**
 * `dualmind migrate-data`: an existing governance.db copied into an empty
 * PostgreSQL database and from there into a fresh governance.db, through the
 * CLI command an operator runs; every table's row count and hash identical
 * at each step, the audit chain verifying, people able to sign in at the end.
 */
const HASH = "c".repeat(64);

async function migrateData(flags: Record<string, string | boolean>) {
  let data: unknown;
  const ctx: CommandContext = { args: [], flags, json: true, out: (_human, d) => (data = d) };
  await dbCommands.find((c) => c.name === "migrate-data")!.run(ctx);
  return data as MigrateDataResult;
}

/** A governance.db with something in every part a team would have: users, tokens, the ledger, a review, failed sign-ins. */
async function fillLedger(g: GovernanceBackend) {
  expect(g.kind).toBe("sqlite");
  await createUser({ input: { username: "root", password: "root-password", role: "admin" }, actor: "test", backend: g });
  await createUser({ input: { username: "vera", password: "vera-password", role: "viewer" }, actor: "test", backend: g });
  await g.setUserDisabled({ username: "vera", disabled: true, actor: "user:root" });
  await g.setUserDisabled({ username: "vera", disabled: false, actor: "user:root" });
  for (let i = 0; i < 3; i++) await signInWithPassword({ username: "vera", password: "wrong-password", address: "198.51.100.4", backend: g });
  await g.createApiToken({ input: { label: "alice", agent_id: "alice", scopes: ["write"] }, actor: "test" });
  const revoked = await g.createApiToken({ input: { label: "old", agent_id: "old", scopes: ["read"] }, actor: "test" });
  await g.revokeApiToken({ id: revoked.info.id, actor: "test", reason: "rotated" });
  await g.createTask({ input: { task_id: "t1", intent: "summarize", spec: { doc: "a.md" }, assignees: ["alice"] }, requestedBy: "alice" });
  const caller = { agentId: "alice", isAdmin: false, stores: null };
  await g.recordRunStart({ taskId: "t1", input: { run_id: "r1", skill: "sum", input_hash: HASH, runner_version: "1" }, caller });
  await g.recordRunFinish({ taskId: "t1", runId: "r1", input: { output_hash: HASH, exit_code: 0 }, caller });
  // Several validations: the latest decides the verdict, so their recording order (SQLite's rowid) must survive the trip.
  await g.recordValidation({ taskId: "t1", input: { critic_passed: true, runner_passed: false, details: { note: "flaky" } }, caller });
  await g.recordValidation({ taskId: "t1", input: { critic_passed: false, runner_passed: true }, caller });
  await g.recordValidation({ taskId: "t1", input: { critic_passed: true, runner_passed: true, details: { note: "fixed" } }, caller });
  await g.createDialecticSession({ input: { session_id: "d1", topic: "retry policy", reviewer_agent_id: "bob" }, agentId: "alice" });
  await g.postDialecticMessage({ sessionId: "d1", agentId: "alice", input: { message_type: "thesis", reasoning: "retry thrice" } });
  await g.postDialecticMessage({ sessionId: "d1", agentId: "bob", input: { message_type: "antithesis", reasoning: "twice", concerns: ["load"] } });
  await g.annotateDialecticSession({ sessionId: "d1", input: { body: "watch this one" }, actor: "user:root" });
}

describe("migrate-data: SQLite → PostgreSQL → SQLite", () => {
  const envs: ReturnType<typeof useTempDataDir>[] = [];
  afterEach(async () => {
    await closePg();
    for (const e of envs.splice(0)) e.cleanup();
  });

  it("copies every table with identical row counts and hashes both ways, verifies the audit chain, and refuses a non-empty target", async () => {
    const url = await createTestDatabase();
    // An existing single-machine install, about to be pointed at PostgreSQL.
    envs.push(useTempDataDir({ DATABASE_URL: url }));
    await fillLedger(governanceOn(SQLITE_ENGINE));
    const original = await checkTables(sqliteSide());
    const counts = Object.fromEntries(original.map((t) => [t.table, t.rows]));
    expect(counts).toMatchObject({ users: 2, login_throttle: 2, api_tokens: 2, tasks: 1, skill_runs: 1, validations: 3, dialectic_sessions: 1, dialectic_messages: 2, dialectic_annotations: 1 });
    expect(counts.audit_log).toBeGreaterThan(5);

    const toPg = await migrateData({ to: "pg" });
    expect(toPg).toMatchObject({ from: "sqlite", to: "postgres", audit: { ok: true, entries: counts.audit_log } });
    expect(toPg.tables).toEqual(original);
    // Again: the target now holds rows, so it is refused and nothing changes.
    await expect(migrateData({ to: "pg" })).rejects.toMatchObject({ code: "conflict" });
    // The copy is live: people sign in from PostgreSQL, and new rows get fresh ids past the copied ones.
    const pg = governanceOn(pgEngine(getPg()!));
    expect((await signInWithPassword({ username: "root", password: "root-password", address: null, backend: pg })).ok).toBe(true);
    const made = await createUser({ input: { username: "nils", password: "nils-password", role: "editor" }, actor: "test", backend: pg });
    expect(made.id).toBe(3);
    await pg.createApiToken({ input: { label: "after", agent_id: "after", scopes: ["read"] }, actor: "test" });
    await pg.revokeApiToken({ id: (await pg.listApiTokens({})).find((t) => t.label === "after")!.id, actor: "test" });
    // Back to the state copied, for the comparison below: --replace copies the original over it again.
    const replaced = await migrateData({ to: "pg", replace: true });
    expect(replaced.tables).toEqual(original);
    await closePg();

    // A fresh install (an empty governance.db) takes the PostgreSQL data back.
    envs.push(useTempDataDir({ DATABASE_URL: url }));
    expect((await checkTables(sqliteSide())).every((t) => t.rows === 0)).toBe(true);
    const back = await migrateData({ to: "sqlite" });
    expect(back).toMatchObject({ from: "postgres", to: "sqlite", audit: { ok: true, entries: counts.audit_log } });
    expect(back.tables).toEqual(original);
    expect(await checkTables(sqliteSide())).toEqual(original);
    const local = governanceOn(SQLITE_ENGINE);
    expect((await local.verifyAuditChain({})).ok).toBe(true);
    expect((await signInWithPassword({ username: "vera", password: "vera-password", address: null, backend: local })).ok).toBe(true);
    expect((await local.getTaskStatus({ taskId: "t1", caller: { agentId: "alice", isAdmin: false, stores: null } })).verdict).toMatchObject({ verdict: "passed" });
    await expect(migrateData({ to: "sqlite" })).rejects.toMatchObject({ code: "conflict" });
  });

  it("copies every store's memories (byte for byte) and API documents both ways, checks them on the target, and counts what it leaves", async () => {
    const url = await createTestDatabase();
    const first = useTempDataDir({ DATABASE_URL: url });
    envs.push(first);
    // A single-machine install with a store: two memories (one with a category description), two API documents, and a thought (not served from PostgreSQL yet).
    createStore({ input: { name: "notes" }, actor: "test" });
    const notes = getStoreDb({ store: "notes" });
    createMemory({ handle: notes, input: createMemorySchema.parse({ path: "ops/pager", body: "The pager rotation changes on Mondays at 09:00.\n\nÜmlauts stay: café.", tags: ["ops", "oncall"] }), actor: "test" });
    createMemory({ handle: notes, input: createMemorySchema.parse({ path: "ops/deep/backups", body: "Backups run nightly with pg_dump." }), actor: "test" });
    setCategoryDescription({ handle: notes, input: { path: "ops", description: "How we run things" }, actor: "test" });
    putDocuments({ handle: notes, input: { documents: [{ path: "runbooks/restore.md", content: "# Restore\n\nRestore the zanzibar volume first." }, { path: "src/retry.ts", content: "export const retries = 3; // zanzibar" }] }, actor: "test" });
    const pagerFile = fs.readFileSync(path.join(storeDir("notes"), "memory", "ops", "pager.md"));

    // A document read from a source root on this machine is not copied: refused before anything is written, naming it, unless the operator accepts leaving it.
    ingestDocument({ handle: notes, path: "/srv/notes/readme.md", origin: "file", kind: "markdown", text: "a file on this disk", mtime: 1 });
    await expect(migrateData({ to: "pg" })).rejects.toMatchObject({ code: "conflict", message: expect.stringContaining("store notes holds rows migrate-data does not copy (1 source-root documents)") });
    expect(await governanceOn(pgEngine(getPg()!)).listUsers({})).toEqual([]);
    const toPg = (await migrateData({ to: "pg", "allow-loss": true })) as MigrateDataResult & { stores: StoreCopyCheck[] };
    const copied = toPg.stores.find((c) => c.store === "notes")!;
    expect(copied).toMatchObject({ created: true, memories: 2, apiDocuments: 2, notCopied: { "source-root documents": 1 } });
    expect(copied.chunks).toBeGreaterThanOrEqual(4);
    // What agents see on PostgreSQL now: the memory with its body, the API document by search, the category description.
    expect((await stores().getMemory({ store: "notes", memoryPath: "ops/pager" })).body).toContain("Ümlauts stay: café.");
    const hits = await stores().search({ store: "notes", input: searchInputSchema.parse({ q: "zanzibar", mode: "fts" }) });
    expect(hits.results.map((h) => h.path).sort()).toEqual(["runbooks/restore.md", "src/retry.ts"]);
    expect((await stores().listCategoryChildren({ store: "notes", parent: null, limit: 100, offset: 0 })).categories.find((c) => c.path === "ops")?.description).toBe("How we run things");
    // --replace empties the PostgreSQL store and copies it again: the same documents, the same check.
    const again = (await migrateData({ to: "pg", replace: true, "allow-loss": true })) as MigrateDataResult & { stores: StoreCopyCheck[] };
    expect(again.stores.find((c) => c.store === "notes")).toMatchObject({ created: false, sha256: copied.sha256, chunks: copied.chunks });
    await closePg();

    // Back into a fresh data dir: the memory file is byte-identical, the API documents searchable, the same digest.
    const second = useTempDataDir({ DATABASE_URL: url });
    envs.push(second);
    const back = (await migrateData({ to: "sqlite", "allow-loss": true })) as MigrateDataResult & { stores: StoreCopyCheck[] };
    expect(back.stores.find((c) => c.store === "notes")).toMatchObject({ created: true, memories: 2, apiDocuments: 2, sha256: copied.sha256, chunks: copied.chunks });
    expect(fs.readFileSync(path.join(second.dataDir, "stores", "notes", "memory", "ops", "pager.md")).equals(pagerFile)).toBe(true);
    expect(fs.readFileSync(path.join(second.dataDir, "stores", "notes", "memory", "ops", "_category.md"), "utf8")).toBe("How we run things\n");
    const local = getStoreDb({ store: "notes" });
    expect((local.sqlite.prepare("select count(*) as n from documents where origin = 'api'").get() as { n: number }).n).toBe(2);
    expect((local.sqlite.prepare("select count(*) as n from chunks_fts where chunks_fts match 'zanzibar'").get() as { n: number }).n).toBe(2);
    // A local store that already holds something is never overwritten.
    await expect(migrateData({ to: "sqlite", replace: true, "allow-loss": true })).rejects.toMatchObject({ code: "conflict" });
  });

  it("copies traces, learnings, recall history, thoughts, the graph and working memory both ways with their ids, checks every table, and queues their vectors", async () => {
    const url = await createTestDatabase();
    envs.push(useTempDataDir({ DATABASE_URL: url }));
    // An agent's store on one machine: what it tried, learned, recalled and thought, and the graph it built.
    createStore({ input: { name: "ops" }, actor: "test" });
    const h = getStoreDb({ store: "ops" });
    const failed = recordTrace({ handle: h, agentId: "a1", input: { intent: { verb: "repair", target: "auth token refreshing" }, key_files: ["lib/auth/refresh.ts"], shard_type: "web", outcome: "failure", key_issue: "clock skew", error_tags: ["401"] } }).trace;
    recordTrace({ handle: h, agentId: "a1", input: { intent: { verb: "deploy", target: "billing worker" }, shard_type: "ops", outcome: "success" } });
    const learned = recordLearning({ handle: h, agentId: "a1", input: { predicate: "prefers", args: { tool: "pg_dump", compress: 9, custom: true }, description: "custom format restores selectively", confidence: 0.75 } }).learning;
    updateReflectionSettings({ handle: h, input: { settings: { min_score: 0.05 }, reason: "fewer misses" }, actor: "user:root" });
    const recalled = await recallReflections({ engine: sqliteRecall, handle: h, agentId: "a2", input: { intent: { verb: "repair", target: "auth token refreshing" } } });
    expect(recalled.traces.map((t) => t.id)).toContain(failed.id);
    const [event] = listRecentRecallEvents({ handle: h });
    const rated = rateRecallHit({ handle: h, input: { hit_id: event.hits[0].id, relevant: true }, actor: "user:root" });
    const first = thinkThought({ handle: h, input: { content: "the refresh fails when clocks drift", chain_id: "auth-1", framework: "debug" }, actor: "a1" });
    const second = thinkThought({ handle: h, input: { content: "allow sixty seconds of skew", chain_id: "auth-1", framework: "debug" }, actor: "a1" });
    const api = createNode({ handle: h, input: { name: "auth api", entity_type: "system", tags: ["auth"] }, actor: "a1" });
    const ntp = createNode({ handle: h, input: { name: "ntp", entity_type: "tool" }, actor: "a1" });
    const frame = createFrame({ handle: h, input: { node_id: api.id, column: "semantic", properties: { status: "flaky" } }, actor: "a1" });
    const relation = createOrMergeRelation({ handle: h, input: { from_id: ntp.id, to_id: api.id, relationship_type: "keeps time for", weight: 0.7, bidirectional: true }, actor: "a1" }).relation;
    linkEvidence({ handle: h, input: { target: "frame", target_id: frame.id, thought_id: first.id }, actor: "a1" });
    linkEvidence({ handle: h, input: { target: "relation", target_id: relation.id, thought_id: second.id, stance: "supports" }, actor: "a1" });
    setWorkingMemory({ handle: h, input: { key: "current-task", value: { step: 2, of: ["a", "b"] } }, actor: "a1" });

    const toPg = (await migrateData({ to: "pg" })) as MigrateDataResult & { stores: StoreCopyCheck[] };
    const copied = toPg.stores.find((c) => c.store === "ops")!;
    const rows = Object.fromEntries(copied.tables.map((t) => [t.table, t.rows]));
    expect(rows).toEqual({
      reasoning_traces: 2, learnings: 1, reflection_settings: 1, recall_events: 1, recall_event_hits: rows.recall_event_hits, chains: 1, thoughts: 2,
      kg_node: 2, kg_frame: 1, kg_relation: 1, kg_frame_evidence: 1, kg_relation_evidence: 1, working_memory: 1,
    });
    expect(rows.recall_event_hits).toBeGreaterThanOrEqual(1);
    // Every copied artifact the PostgreSQL worker embeds waits for its vector there.
    expect(copied.queued).toEqual({ trace: 2, learning: 1, thought: 2, node: 2 });

    // What agents and people read from PostgreSQL now: the same ids, the same content.
    const recall = recallBackend();
    expect(await recall.getTrace({ store: "ops", id: failed.id })).toMatchObject({ key_issue: "clock skew", key_files: ["lib/auth/refresh.ts"], error_tags: ["401"], outcome: "failure" });
    expect((await recall.getLearning({ store: "ops", id: learned.id })).args).toEqual({ tool: "pg_dump", compress: 9, custom: true });
    const again = await recall.recall({ store: "ops", agentId: "a2", input: { intent: { verb: "repair", target: "auth token refreshing" } } });
    expect(again.traces.map((t) => t.id)).toContain(failed.id);
    const graph = graphBackend();
    expect((await graph.getChain({ store: "ops", id: "auth-1" })).thoughts.map((t) => t.content)).toEqual([first.content, second.content]);
    const detail = await graph.getNodeDetail({ store: "ops", id: api.id });
    expect(JSON.stringify(detail)).toContain(relation.id);
    expect(await graph.getRelation({ store: "ops", id: relation.id })).toEqual(relation);
    expect((await graph.listEvidence({ store: "ops", query: { target: "relation", target_id: relation.id } })).evidence).toEqual([{ thought_id: second.id, stance: "supports" }]);
    expect((await graph.getWorkingMemory({ store: "ops", key: "current-task" })).value).toEqual({ step: 2, of: ["a", "b"] });
    // New rows get fresh ids past the copied ones.
    const next = await recall.recordTrace({ store: "ops", agentId: "a3", input: { intent: { verb: "rotate", target: "signing keys" }, shard_type: "ops", outcome: "success" } });
    expect(next.trace.id).toBeGreaterThan(Math.max(failed.id, 2));
    // --replace copies the local store over again: the new trace is gone, the tables hash as before.
    const replaced = (await migrateData({ to: "pg", replace: true })) as MigrateDataResult & { stores: StoreCopyCheck[] };
    expect(replaced.stores.find((c) => c.store === "ops")!.tables).toEqual(copied.tables);
    await closePg();

    // Into a fresh data dir: every table hashes as it did on PostgreSQL, and the SQLite full-text follows.
    envs.push(useTempDataDir({ DATABASE_URL: url }));
    const back = (await migrateData({ to: "sqlite" })) as MigrateDataResult & { stores: StoreCopyCheck[] };
    const home = back.stores.find((c) => c.store === "ops")!;
    expect(home.tables).toEqual(copied.tables);
    expect(home.queued).toEqual({ trace: 2, learning: 1, thought: 2, node: 2 });
    const local = getStoreDb({ store: "ops" });
    const lexical = await recallReflections({ engine: sqliteRecall, handle: local, agentId: "a2", input: { intent: { verb: "repair", target: "auth token refreshing" } } });
    expect(lexical.traces.map((t) => t.id)).toContain(failed.id);
    expect(getRecallEventById({ handle: local, id: event.id }).hits.find((x) => x.id === rated.id)?.relevant).toBe(true);
  });
});
