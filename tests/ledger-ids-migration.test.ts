import Database from "better-sqlite3";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePgTo } from "drizzle-orm/node-postgres/migrator";
import { Pool } from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { applyPragmas } from "@/lib/db/connection";
import { SIGNATURE_GENESIS, signMessage } from "@/lib/governance/dialectic";
import type { LedgerCaller } from "@/lib/governance/ledger";
import { migrationsUpTo } from "./helpers";
import { governanceSql, onPg, useTestBackend, type TestEnv } from "./backend";

// A ledger written before task and review ids were namespaced per owner
// (governance.db at 0011, PostgreSQL at 0003), upgraded by the migrations:
// every row keeps its id as its key, so its owner, its assignees and old
// dashboard links find it as before, and another agent may now use the same id.

const HASH = "c".repeat(64);
let env: TestEnv;
let scratch: string;
beforeEach(async () => {
  env = await useTestBackend({}, { bootstrap: false });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-ids-old-"));
});
afterEach(async () => {
  await env.cleanup();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const caller = (agentId: string): LedgerCaller => ({ agentId, isAdmin: false, stores: null });

/** The old release's rows, in SQL both engines run as written. */
function oldRows(now: number): string[] {
  const thesis = { id: "m1", sessionId: "r1", seq: 1, agentId: "agent-a", messageType: "thesis" as const, timestamp: now - 10, reasoning: "the old thesis", rootCause: null, proposedConditionsJson: null, observedMetricsJson: null, concernsJson: null, agrees: null };
  return [
    `insert into tasks (task_id, created_at, requested_by, intent, spec_json, required_checks_json, verdict, updated_at, assignees_json)
       values ('t1', 1000, 'agent-a', 'old work', '{}', '["critic","runner"]', 'pending', 1000, '["agent-c"]')`,
    `insert into skill_runs (run_id, task_id, skill, input_hash, runner_version, started_at, artifacts_json, agent_id) values ('run-1', 't1', 'build', '${HASH}', '1', 1001, '[]', 'agent-a')`,
    `insert into validations (validation_id, task_id, run_id, critic_passed, runner_passed, details_json, ts, agent_id) values ('v1', 't1', null, true, null, 'null', 1002, 'agent-a')`,
    `insert into overrides (override_id, ts, actor, token_label, task_id, note) values ('o1', 1003, 'agent:agent-a', 'tok', 't1', 'shipped anyway')`,
    `insert into dialectic_sessions (session_id, paused_agent_id, reviewer_agent_id, phase, status, created_at, updated_at, topic, session_type, max_rounds, idle_timeout_ms)
       values ('r1', 'agent-a', 'agent-b', 'antithesis', 'active', ${now - 20}, ${now - 10}, 'the old review', 'review', 6, 86400000)`,
    `insert into dialectic_messages (id, session_id, seq, agent_id, message_type, timestamp, reasoning, signature)
       values ('m1', 'r1', 1, 'agent-a', 'thesis', ${now - 10}, 'the old thesis', '${signMessage({ prevSignature: SIGNATURE_GENESIS, message: thesis })}')`,
    `insert into dialectic_annotations (session_id, author, body, created_at) values ('r1', 'user:admin', 'an old note', ${now - 5})`,
  ];
}

/** A release's ledger: migrated up to its last migration on each engine, holding its rows. */
type OldRelease = { sqliteLast: string; pgLast: string; rows: (now: number) => string[] };
const BEFORE_OWNER_IDS: OldRelease = { sqliteLast: "0011_self_recall", pgLast: "0003_self_recall", rows: oldRows };

/** The ledger as an earlier release left it. */
async function writeOldLedger(now: number, release: OldRelease = BEFORE_OWNER_IDS): Promise<void> {
  if (!onPg) {
    const sqlite = new Database(path.join(env.dataDir, "governance.db"));
    applyPragmas(sqlite);
    migrate(drizzle(sqlite), { migrationsFolder: migrationsUpTo({ which: "governance", last: release.sqliteLast, scratch }) });
    for (const statement of release.rows(now)) sqlite.exec(statement);
    sqlite.close();
    return;
  }
  const folder = path.join(scratch, "pg-governance");
  fs.cpSync(path.join(process.cwd(), "drizzle", "pg", "governance"), folder, { recursive: true });
  const journalFile = path.join(folder, "meta", "_journal.json");
  const journal = JSON.parse(fs.readFileSync(journalFile, "utf8")) as { entries: { tag: string }[] };
  const cut = journal.entries.findIndex((e) => e.tag === release.pgLast);
  for (const e of journal.entries.slice(cut + 1)) fs.rmSync(path.join(folder, `${e.tag}.sql`));
  journal.entries = journal.entries.slice(0, cut + 1);
  fs.writeFileSync(journalFile, JSON.stringify(journal));
  const pool = new Pool({ connectionString: env.databaseUrl, max: 1 });
  try {
    await migratePgTo(drizzlePg(pool), { migrationsFolder: folder, migrationsSchema: "drizzle", migrationsTable: "governance_migrations" });
    for (const statement of release.rows(now)) await pool.query(statement);
  } finally {
    await pool.end();
  }
}

describe("upgrading a ledger written before ids were namespaced per owner", () => {
  it("keeps every task and review where its owner, its assignees and old links find it, and frees the id for other agents", async () => {
    const now = Date.now();
    await writeOldLedger(now);
    const g = governance();

    // The owner and the assignee find the task by its id, with everything under it; another agent does not.
    const status = await g.getTaskStatus({ taskId: "t1", caller: caller("agent-a") });
    expect(status.task).toMatchObject({ task_id: "t1", key: "t1", intent: "old work", assignees: ["agent-c"] });
    expect(status.runs.map((r) => [r.run_id, r.task_id])).toEqual([["run-1", "t1"]]);
    expect(status.validations.map((v) => v.validation_id)).toEqual(["v1"]);
    expect(status.overrides.map((o) => [o.override_id, o.task_id])).toEqual([["o1", "t1"]]);
    expect((await g.getTaskStatus({ taskId: "t1", caller: caller("agent-c") })).task.intent).toBe("old work");
    await expect(g.getTaskStatus({ taskId: "t1", caller: caller("agent-b") })).rejects.toMatchObject({ code: "not_found" });

    // The owner's retry of the old create is still a retry; another agent's create of the same id is its own task.
    const retried = await g.createTask({ input: { task_id: "t1", intent: "old work", spec: {}, assignees: ["agent-c"] }, requestedBy: "agent-a" });
    expect(retried.created).toBe(false);
    const theirs = await g.createTask({ input: { task_id: "t1", intent: "new work", spec: {} }, requestedBy: "agent-b" });
    expect(theirs).toMatchObject({ created: true, task: { task_id: "t1", key: "agent-b~t1", requested_by: "agent-b" } });
    // A run recorded now lands under the old task's key, so the old rows and the new ones stay one task.
    await g.recordRunStart({ taskId: "t1", input: { run_id: "run-2", skill: "build", input_hash: HASH, runner_version: "1" }, caller: caller("agent-a") });
    expect((await g.getTaskStatus({ taskId: "t1", caller: caller("agent-a") })).runs.map((r) => r.run_id)).toEqual(["run-1", "run-2"]);

    // The dashboard's old link (/ledger/tasks/t1) still opens the old task; the new one has its own.
    expect((await g.getTaskStatus({ taskId: "t1" })).task.intent).toBe("old work");
    expect((await g.getTaskStatus({ taskId: "agent-b~t1" })).task.intent).toBe("new work");

    // The review: its transcript still verifies, its note is still beside it, and the reviewer carries on.
    const review = await g.getDialecticSessionForAgent({ sessionId: "r1", agentId: "agent-b", isAdmin: false });
    expect(review).toMatchObject({ session_id: "r1", key: "r1", message_count: 1, topic: "the old review" });
    expect(await g.verifyDialecticSession({ sessionId: "r1" })).toEqual({ ok: true, messages: 1 });
    expect((await g.listDialecticAnnotations({ sessionId: "r1" })).map((a) => a.body)).toEqual(["an old note"]);
    await g.postDialecticMessage({ sessionId: "r1", agentId: "agent-b", input: { message_type: "antithesis", reasoning: "an answer after the upgrade" } });
    expect(await g.verifyDialecticSession({ sessionId: "r1" })).toEqual({ ok: true, messages: 2 });

    // Another agent's review with the same id is its own; the old link still opens the old one.
    const other = await g.createDialecticSession({ input: { session_id: "r1", topic: "a new review" }, agentId: "agent-c" });
    expect(other).toMatchObject({ created: true, session: { session_id: "r1", key: "agent-c~r1" } });
    expect((await g.getDialecticSession({ sessionId: "r1" })).topic).toBe("the old review");
    expect((await g.getDialecticSession({ sessionId: "agent-c~r1" })).topic).toBe("a new review");
    // The reviewer's plain id still names the review it reviews: an open review another agent opened with the same id does not shadow it.
    expect((await g.getDialecticSessionForAgent({ sessionId: "r1", agentId: "agent-b", isAdmin: false })).topic).toBe("the old review");

    // Once the reviewer has a review "r1" of its own, the old one is still reachable by its owner's key spelled out (owner~id).
    await g.createDialecticSession({ input: { session_id: "r1", topic: "b's own review" }, agentId: "agent-b" });
    expect((await g.getDialecticSessionForAgent({ sessionId: "r1", agentId: "agent-b", isAdmin: false })).topic).toBe("b's own review");
    expect((await g.getDialecticSessionForAgent({ sessionId: "agent-a~r1", agentId: "agent-b", isAdmin: false })).topic).toBe("the old review");
    // The same for a task: the assignee with its own "t1" reaches the old one as agent-a~t1; the owner may spell it too.
    await g.createTask({ input: { task_id: "t1", intent: "c's own work", spec: {} }, requestedBy: "agent-c" });
    expect((await g.getTaskStatus({ taskId: "t1", caller: caller("agent-c") })).task.intent).toBe("c's own work");
    expect((await g.getTaskStatus({ taskId: "agent-a~t1", caller: caller("agent-c") })).task.intent).toBe("old work");
    expect((await g.getTaskStatus({ taskId: "agent-a~t1", caller: caller("agent-a") })).task.intent).toBe("old work");
    // A spelled key of a task the caller may not see answers like an unknown one.
    await expect(g.getTaskStatus({ taskId: "agent-a~t1", caller: caller("agent-b") })).rejects.toMatchObject({ code: "not_found" });

    // The migrated rows kept their id as client id; one owner cannot hold one id twice.
    expect(await governanceSql("select task_id, client_id from tasks where requested_by = 'agent-a'")).toEqual([{ task_id: "t1", client_id: "t1" }]);
    await expect(
      governanceSql(`insert into tasks (task_id, client_id, created_at, requested_by, intent, spec_json, required_checks_json, verdict, updated_at) values ('agent-a~t1', 't1', 1, 'agent-a', 'i', '{}', '[]', 'pending', 1)`),
    ).rejects.toThrow(/unique/i);
  });

  it("a review's reviewer keeps its plain id when another agent opens a review anyone may claim with the same id", async () => {
    const g = governance();
    await g.createDialecticSession({ input: { session_id: "review-42", topic: "a's review", reviewer_agent_id: "agent-c" }, agentId: "agent-a" });
    await g.postDialecticMessage({ sessionId: "review-42", agentId: "agent-a", input: { message_type: "thesis", reasoning: "the claim" } });
    // An unrelated agent opens its own review with the same id and no reviewer: every agent may see it.
    await g.createDialecticSession({ input: { session_id: "review-42", topic: "b's open review" }, agentId: "agent-b" });
    expect((await g.getDialecticSessionForAgent({ sessionId: "review-42", agentId: "agent-c", isAdmin: false })).topic).toBe("a's review");
    await g.postDialecticMessage({ sessionId: "review-42", agentId: "agent-c", input: { message_type: "antithesis", reasoning: "the answer" } });
    expect(await g.verifyDialecticSession({ sessionId: "agent-a~review-42" })).toEqual({ ok: true, messages: 2 });
  });
});

// A ledger written when task and review ids were namespaced but run, validation, override and message ids were
// still global (governance.db at 0012, PostgreSQL at 0004): each of those rows keeps its id as its key, so
// provenance, validations and signatures that name it are unchanged, and another task may now use the same id.
function globalChildIdRows(now: number): string[] {
  const thesis = { id: "m1", sessionId: "agent-a~r1", seq: 1, agentId: "agent-a", messageType: "thesis" as const, timestamp: now - 10, reasoning: "the old thesis", rootCause: null, proposedConditionsJson: null, observedMetricsJson: null, concernsJson: null, agrees: null };
  return [
    `insert into tasks (task_id, client_id, created_at, requested_by, intent, spec_json, required_checks_json, verdict, updated_at)
       values ('agent-a~t1', 't1', 1000, 'agent-a', 'old work', '{}', '["critic"]', 'pending', 1000)`,
    `insert into skill_runs (run_id, task_id, skill, input_hash, runner_version, started_at, finished_at, output_hash, exit_code, artifacts_json, agent_id)
       values ('run-1', 'agent-a~t1', 'build', '${HASH}', '1', 1001, 1002, '${HASH}', 0, '[{"artifact_type":"chunk","artifact_id":"c1","store":"default"}]', 'agent-a')`,
    `insert into provenance (artifact_type, artifact_id, store, model_name, model_version, input_hash, task_id, run_id, recorded_by, created_at)
       values ('chunk', 'c1', 'default', '', '', '${HASH}', 'agent-a~t1', 'run-1', 'agent-a', 1002)`,
    `insert into validations (validation_id, task_id, run_id, critic_passed, runner_passed, details_json, ts, agent_id) values ('v1', 'agent-a~t1', 'run-1', true, null, 'null', 1003, 'agent-a')`,
    `insert into overrides (override_id, ts, actor, token_label, task_id, note) values ('o1', 1004, 'agent:agent-a', 'tok', null, 'shipped anyway')`,
    `insert into dialectic_sessions (session_id, client_id, paused_agent_id, reviewer_agent_id, phase, status, created_at, updated_at, topic, session_type, max_rounds, idle_timeout_ms)
       values ('agent-a~r1', 'r1', 'agent-a', 'agent-b', 'antithesis', 'active', ${now - 20}, ${now - 10}, 'the old review', 'review', 6, 86400000)`,
    `insert into dialectic_messages (id, session_id, seq, agent_id, message_type, timestamp, reasoning, signature)
       values ('m1', 'agent-a~r1', 1, 'agent-a', 'thesis', ${now - 10}, 'the old thesis', '${signMessage({ prevSignature: SIGNATURE_GENESIS, message: thesis })}')`,
  ];
}

describe("upgrading a ledger whose run, validation, override and message ids were global", () => {
  it("keeps every row where its task, session and links find it, and frees each id for other parents", async () => {
    const now = Date.now();
    await writeOldLedger(now, { sqliteLast: "0012_owner_namespaced_ids", pgLast: "0004_owner_namespaced_ids", rows: globalChildIdRows });
    const g = governance();
    const a = caller("agent-a");

    // The task still holds its run, validation and artifact, linked as before, and its verdict stands on them.
    const status = await g.getTaskStatus({ taskId: "t1", caller: a });
    expect(status.runs.map((r) => [r.run_id, r.task_id, r.status])).toEqual([["run-1", "t1", "succeeded"]]);
    expect(status.validations.map((v) => [v.validation_id, v.run_id])).toEqual([["v1", "run-1"]]);
    expect(status.artifacts.map((p) => [p.artifact_id, p.task_id, p.run_id])).toEqual([["c1", "t1", "run-1"]]);
    expect(status.verdict).toEqual({ verdict: "passed", reasons: ["critic passed in validation v1"] });
    const proofs = await g.getProofsByArtifact({ input: { artifact_type: "chunk", artifact_id: "c1" }, caller: a });
    expect(proofs.provenance.map((p) => p.run_id)).toEqual(["run-1"]);
    expect(proofs.runs.map((r) => r.run_id)).toEqual(["run-1"]);
    expect(proofs.validations.map((v) => v.validation_id)).toEqual(["v1"]);

    // Retries of the old writes are still retries.
    expect((await g.recordRunStart({ taskId: "t1", input: { run_id: "run-1", skill: "build", input_hash: HASH, runner_version: "1", output_hash: HASH, exit_code: 0, artifacts: [{ artifact_type: "chunk", artifact_id: "c1", store: "default" }] }, caller: a })).created).toBe(false);
    expect((await g.recordValidation({ taskId: "t1", input: { validation_id: "v1", run_id: "run-1", critic_passed: true, runner_passed: null }, caller: a })).created).toBe(false);
    expect((await g.recordOverride({ input: { override_id: "o1", note: "shipped anyway" }, actor: "agent:agent-a", tokenLabel: "tok", caller: a })).created).toBe(false);

    // Another agent's task takes the same run and validation ids, and another actor the same override id: each its own row.
    const b = caller("agent-b");
    await g.createTask({ input: { task_id: "t2", intent: "b's work", spec: {} }, requestedBy: "agent-b" });
    expect((await g.recordRunStart({ taskId: "t2", input: { run_id: "run-1", skill: "build", input_hash: HASH, runner_version: "2" }, caller: b })).created).toBe(true);
    expect((await g.recordValidation({ taskId: "t2", input: { validation_id: "v1", run_id: "run-1", critic_passed: false, runner_passed: null }, caller: b })).created).toBe(true);
    expect((await g.recordOverride({ input: { override_id: "o1", note: "b's own" }, actor: "agent:agent-b", tokenLabel: "tb", caller: b })).created).toBe(true);
    expect((await g.getTaskStatus({ taskId: "t1", caller: a })).validations.map((v) => v.critic_passed)).toEqual([true]);
    expect((await g.getTaskStatus({ taskId: "t2", caller: b })).validations.map((v) => [v.validation_id, v.run_id, v.critic_passed])).toEqual([["v1", "run-1", false]]);

    // The review's transcript still verifies; its message id is free in another session, and the chain goes on.
    expect(await g.verifyDialecticSession({ sessionId: "agent-a~r1" })).toEqual({ ok: true, messages: 1 });
    await g.postDialecticMessage({ sessionId: "r1", agentId: "agent-b", input: { message_id: "m2", message_type: "antithesis", reasoning: "an answer after the upgrade" } });
    expect(await g.verifyDialecticSession({ sessionId: "agent-a~r1" })).toEqual({ ok: true, messages: 2 });
    await g.createDialecticSession({ input: { session_id: "r9", topic: "c's review" }, agentId: "agent-c" });
    expect((await g.postDialecticMessage({ sessionId: "r9", agentId: "agent-c", input: { message_id: "m1", message_type: "thesis", reasoning: "c's thesis" } })).created).toBe(true);
    expect((await g.getDialecticSession({ sessionId: "agent-a~r1" })).messages?.map((m) => m.id)).toEqual(["m1", "m2"]);

    // The old rows kept their ids as keys; the new ones are keyed under their parent.
    expect(await governanceSql("select run_id, client_id from skill_runs order by run_id")).toEqual([
      { run_id: "agent-b~t2~run-1", client_id: "run-1" },
      { run_id: "run-1", client_id: "run-1" },
    ]);
    expect(await governanceSql("select override_id, client_id from overrides order by override_id")).toEqual([
      { override_id: "agent:agent-b~o1", client_id: "o1" },
      { override_id: "o1", client_id: "o1" },
    ]);
    expect(await governanceSql("select id from dialectic_messages order by id")).toEqual([{ id: "agent-a~r1~m2" }, { id: "agent-c~r9~m1" }, { id: "m1" }]);
  });
});
