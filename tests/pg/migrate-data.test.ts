import { afterEach, describe, expect, it } from "vitest";
import { pgGovernance, sqliteGovernanceBackend, type GovernanceBackend } from "@/lib/backend/governance";
import { checkTables, sqliteSide, type MigrateDataResult } from "@/lib/backend/migrate-data";
import { createUser, signInWithPassword } from "@/lib/backend/users";
import { closePg, getPg } from "@/lib/db/pg";
import type { CommandContext } from "@/scripts/cli-kit";
import { dbCommands } from "@/scripts/commands/db-commands";
import fs from "node:fs";
import path from "node:path";
import type { StoreCopyCheck } from "@/lib/stores/migrate-stores";
import { getStoreDb, storeDir } from "@/lib/db/connection";
import { thinkThought } from "@/lib/graph/thoughts";
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
    await fillLedger(sqliteGovernanceBackend());
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
    const pg = pgGovernance(getPg()!);
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
    const local = sqliteGovernanceBackend();
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
    const notes = getStoreDb("notes");
    createMemory({ handle: notes, input: createMemorySchema.parse({ path: "ops/pager", body: "The pager rotation changes on Mondays at 09:00.\n\nÜmlauts stay: café.", tags: ["ops", "oncall"] }), actor: "test" });
    createMemory({ handle: notes, input: createMemorySchema.parse({ path: "ops/deep/backups", body: "Backups run nightly with pg_dump." }), actor: "test" });
    setCategoryDescription({ handle: notes, input: { path: "ops", description: "How we run things" }, actor: "test" });
    putDocuments({ handle: notes, input: { documents: [{ path: "runbooks/restore.md", content: "# Restore\n\nRestore the zanzibar volume first." }, { path: "src/retry.ts", content: "export const retries = 3; // zanzibar" }] }, actor: "test" });
    thinkThought({ handle: notes, input: { content: "the pager should page twice" }, actor: "test" });
    const pagerFile = fs.readFileSync(path.join(storeDir("notes"), "memory", "ops", "pager.md"));

    // The thought is not copied yet: refused before anything is written, naming it, unless the operator accepts leaving it.
    await expect(migrateData({ to: "pg" })).rejects.toMatchObject({ code: "conflict", message: expect.stringContaining("store notes holds rows migrate-data does not copy yet (1 thoughts)") });
    expect(await pgGovernance(getPg()!).listUsers({})).toEqual([]);
    const toPg = (await migrateData({ to: "pg", "allow-loss": true })) as MigrateDataResult & { stores: StoreCopyCheck[] };
    const copied = toPg.stores.find((c) => c.store === "notes")!;
    expect(copied).toMatchObject({ created: true, memories: 2, apiDocuments: 2, notCopied: { thoughts: 1 } });
    expect(copied.chunks).toBeGreaterThanOrEqual(4);
    // What agents see on PostgreSQL now: the memory with its body, the API document by search, the category description.
    expect((await stores().getMemory({ store: "notes", memoryPath: "ops/pager" })).body).toContain("Ümlauts stay: café.");
    const hits = await stores().search({ store: "notes", input: searchInputSchema.parse({ q: "zanzibar", mode: "fts" }) });
    expect(hits.results.map((h) => h.path).sort()).toEqual(["runbooks/restore.md", "src/retry.ts"]);
    expect((await stores().listCategoryChildren({ store: "notes", parent: null })).find((c) => c.path === "ops")?.description).toBe("How we run things");
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
    const local = getStoreDb("notes");
    expect((local.sqlite.prepare("select count(*) as n from documents where origin = 'api'").get() as { n: number }).n).toBe(2);
    expect((local.sqlite.prepare("select count(*) as n from chunks_fts where chunks_fts match 'zanzibar'").get() as { n: number }).n).toBe(2);
    // A local store that already holds something is never overwritten.
    await expect(migrateData({ to: "sqlite", replace: true, "allow-loss": true })).rejects.toMatchObject({ code: "conflict" });
  });
});
