/**
 * The CLI's store commands on both backends — search, verify, reindex,
 * recall, reflection, metrics status and reembed — as a user runs them
 * (runCli: the output, --json and the exit code): they go through the
 * backends the API uses, so with DATABASE_URL they read and write the
 * store's PostgreSQL schema and the ledger there, never a local index.db.
 * The commands that work on SQLite files only refuse with DATABASE_URL
 * (exit 2), saying what to use instead, and write nothing to DATA_DIR.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { governance } from "@/lib/backend/governance";
import { resetConfigForTests } from "@/lib/config";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { createMemorySchema } from "@/lib/index/memories";
import type { TraceInput } from "@/lib/recall/descriptors";
import { stores } from "@/lib/stores/backend";
import { runCli, type Command } from "@/scripts/cli-kit";
import { agentsCommands } from "@/scripts/commands/agents-commands";
import { authCommands } from "@/scripts/commands/auth-commands";
import { healthCommands } from "@/scripts/commands/health-commands";
import { indexCommands } from "@/scripts/commands/index-commands";
import { ledgerCommands } from "@/scripts/commands/ledger-commands";
import { memoryCommands } from "@/scripts/commands/memory-commands";
import { recallCommands } from "@/scripts/commands/recall-commands";
import { storeCommands } from "@/scripts/commands/store-commands";
import { drainEmbeddings, governanceSql, onPg, seedStore, seedTrace, storeSql, useTestBackend, type TestEnv } from "./backend";
import { patience } from "./fixtures/patience";

const COMMANDS: Command[] = [...storeCommands, ...indexCommands, ...recallCommands, ...agentsCommands, ...healthCommands, ...memoryCommands, ...authCommands, ...ledgerCommands];
const CLI_ACTOR = `cli:${process.env.USER ?? "local"}`;

let env: TestEnv;
const seed = () => seedStore("ops");
beforeEach(async () => {
  env = await useTestBackend({}, { seed });
});
afterEach(async () => {
  configureDimension(undefined);
  await env.cleanup();
});

/** `dualmind <argv>` in this process: what it printed on stdout and stderr, and its exit code. */
async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const out = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => ((stdout += String(chunk)), true));
  const err = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    const code = await runCli(COMMANDS, argv);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/** The configured model, as an operator sets it (DUALMIND_EMBED_DIM), picked up like a restart would. */
function configureDimension(dim: string | undefined): void {
  if (dim === undefined) delete process.env.DUALMIND_EMBED_DIM;
  else process.env.DUALMIND_EMBED_DIM = dim;
  resetConfigForTests();
  resetEmbedderForTests();
}

async function seedMemory(memoryPath: string, body: string): Promise<void> {
  await stores().createMemory({ store: "ops", input: createMemorySchema.parse({ path: memoryPath, body }), actor: "test" });
}

/** A memory edited behind the index's back: its file on SQLite, its row on PostgreSQL (where the memories table is the truth). */
async function editMemoryOutsideTheApp(memoryPath: string, body: string): Promise<void> {
  if (onPg) await storeSql("ops", "update memories set content = ? where path = ?", [body, memoryPath]);
  else fs.writeFileSync(path.join(env.dataDir, "stores", "ops", "memory", `${memoryPath}.md`), body);
}

const TLS_FAILURE: TraceInput = {
  intent: { verb: "rotate", target: "nginx TLS certificate" },
  shard_type: "ops",
  key_files: ["etc/nginx/nginx.conf"],
  outcome: "failure",
  key_issue: "nginx kept serving the old certificate until it was reloaded",
  error_tags: ["tls"],
};

describe("the store commands on this backend", () => {
  it("search prints the seeded document's path; verify says OK, then finds the edited memory; reindex runs its audited job to the end and verify is OK again", async () => {
    await seedMemory("runbooks/restart", "Restart the nginx worker, then watch the backlog.");

    const found = await cli("search", "ops", "nginx", "worker", "--mode", "fts");
    expect(found.code, found.stderr).toBe(0);
    expect(found.stdout).toMatch(/^mode fts, group document, 1 result\(s\)\n/);
    expect(found.stdout).toContain("\tops\tmemory/runbooks/restart.md#0");
    const foundJson = JSON.parse((await cli("search", "ops", "nginx", "--mode", "fts", "--json")).stdout);
    expect(foundJson.results.map((r: { path: string }) => r.path)).toEqual(["memory/runbooks/restart.md"]);
    // --json prints the keys it always has (camelCase), as scripts read them.
    expect(foundJson).toMatchObject({ effective_mode: "fts", has_more: false, results: [{ chunk_index: 0 }] });

    const truth = onPg ? "memories" : "files";
    const ok = await cli("verify", "ops");
    expect(ok).toMatchObject({ code: 0, stdout: expect.stringMatching(new RegExp(`^ops: OK \\(1 ${truth}, 1 file documents, 0 API documents, 1 chunks\\)\\n`)) });

    await editMemoryOutsideTheApp("runbooks/restart", "Restart the sourdough starter feeding schedule.");
    const drifted = await cli("verify", "ops", "--json");
    expect(drifted.code).toBe(1);
    expect(JSON.parse(drifted.stdout)).toMatchObject({ store: "ops", ok: false, hash_mismatches: ["memory/runbooks/restart.md"] });
    expect((await cli("verify", "ops")).stdout).toContain("PROBLEMS FOUND");

    const reindexed = await cli("reindex", "ops");
    expect(reindexed.code, reindexed.stderr).toBe(0);
    expect(reindexed.stdout).toMatch(/^ops: scanned 1, added 0, changed 1, unchanged 0, removed 0, skipped 0 in [\d.]+ ms \(job [0-9a-f-]{36}\)\n$/);
    const jobId = /\(job ([0-9a-f-]{36})\)/.exec(reindexed.stdout)![1];
    // The same job row and one audit entry, as POST /stores/{store}/reindex writes, naming the CLI's user.
    expect(await governanceSql("select id, store, status, actor from admin_jobs")).toEqual([{ id: jobId, store: "ops", status: "succeeded", actor: CLI_ACTOR }]);
    expect(await governanceSql("select actor, target, reason, details from audit_log where action = 'store.reindex'")).toEqual([
      { actor: CLI_ACTOR, target: "store:ops", reason: "dualmind reindex", details: JSON.stringify({ jobId }) },
    ]);
    expect((await cli("verify", "ops")).code).toBe(0);
    expect((await cli("search", "ops", "sourdough", "--mode", "fts")).stdout).toContain("\tops\tmemory/runbooks/restart.md#0");

    // --all is every store of this backend; --json answers the finished job.
    const all = await cli("reindex", "--all", "--json");
    expect(all.code, all.stderr).toBe(0);
    expect((await cli("verify", "--all")).stdout.match(/^\S+: OK/gm)).toEqual((await stores().listStoreNames()).map((s) => `${s}: OK`));
    expect(JSON.parse((await cli("reindex", "ops", "--json")).stdout)).toMatchObject({ kind: "reindex", store: "ops", status: "succeeded", result: { counts: { scanned: 1, unchanged: 1 } } });

    // An unknown store is not found (exit 2), with nothing started.
    const unknown = await cli("reindex", "ghost");
    expect(unknown).toMatchObject({ code: 2, stderr: "error: store ghost does not exist\n" });
    expect((await cli("search", "ghost", "nginx")).code).toBe(2);
    // With DATABASE_URL nothing went to a local SQLite store.
    if (onPg) expect(fs.existsSync(path.join(env.dataDir, "stores", "ops"))).toBe(false);
  });

  it("tokens create, list and revoke: --json spells a token as GET /tokens does, never its hash", async () => {
    const made = await cli("tokens", "create", "--label", "ci", "--agent", "ci-bot", "--scopes", "read", "--stores", "ops", "--json");
    expect(made.code, made.stderr).toBe(0);
    const created = JSON.parse(made.stdout);
    expect(created).toMatchObject({ token: expect.stringMatching(/^dm_/), label: "ci", agent_id: "ci-bot", scopes: ["read"], stores: ["ops"], display_prefix: created.token.slice(0, 10), created_by: expect.any(String), last_used_at: null, revoked_at: null });
    expect((await cli("tokens", "revoke", String(created.id), "--json")).code).toBe(0);
    const { tokens } = JSON.parse((await cli("tokens", "list", "--json")).stdout);
    expect(tokens.find((t: { id: number }) => t.id === created.id)).toMatchObject({ agent_id: "ci-bot", revoked_at: expect.any(Number) });
    expect(JSON.stringify(tokens)).not.toMatch(/token_hash|tokenHash/);
  });

  it("recall prints the seeded trace; reflection show, set (audited), metrics and retention act on the same store", async () => {
    const trace = (await seedTrace("ops", TLS_FAILURE)).trace;
    const older = (await seedTrace("ops", { ...TLS_FAILURE, intent: { verb: "renew", target: "postgres TLS certificate" }, outcome: "success", key_issue: "" })).trace;
    await drainEmbeddings(["ops"]);

    const recalled = await cli("recall", "ops", "nginx", "TLS", "certificate", "reload");
    expect(recalled.code, recalled.stderr).toBe(0);
    expect(recalled.stdout).toMatch(new RegExp(`^trace ${trace.id}\\t[\\d.]+\\tfailure\\t`, "m"));
    // --json spells the answer as POST /stores/{store}/recall does.
    const recalledJson = JSON.parse((await cli("recall", "ops", "nginx", "certificate", "--json")).stdout);
    expect(recalledJson.traces.map((t: { id: number }) => t.id)).toContain(trace.id);
    expect(recalledJson).toMatchObject({ event_id: expect.any(Number), cache_hit: expect.any(Boolean), latency_ms: expect.any(Number) });

    const shown = await cli("reflection", "show", "ops");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^traces 2 \(1 failures, 0 without vector\), learnings 0, awaiting vectors 0\nrecalls 2, /);

    const set = await cli("reflection", "set", "ops", "top_k=3", "retention.ttl_days=30", "--reason", "a small store", "--json");
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ top_k: 3, retention: { ttl_days: 30 } });
    expect(await governanceSql("select actor, target, reason from audit_log where action = 'reflection.settings.update'")).toEqual([{ actor: CLI_ACTOR, target: "store:ops", reason: "a small store" }]);
    expect((await cli("reflection", "show", "ops", "--json")).stdout).toContain('"top_k": 3');

    const metrics = await cli("reflection", "metrics", "ops", "--json");
    expect(JSON.parse(metrics.stdout).buckets.reduce((n: number, b: { recalls: number }) => n + b.recalls, 0)).toBe(2);
    expect(JSON.parse(metrics.stdout).buckets[0]).toMatchObject({ hit_rate: expect.any(Number), p50_ms: expect.any(Number), p95_ms: expect.any(Number) });
    expect((await cli("reflection", "metrics", "ops")).stdout).toMatch(/\trecalls 2\thit rate /);
    expect((await cli("reflection", "metrics", "ops", "--days", "nope")).code).toBe(2);

    // The 30-day TTL, applied now: the trace last seen 60 days ago goes.
    await storeSql("ops", "update reasoning_traces set last_seen_at = ? where id = ?", [Date.now() - 60 * 86_400_000, older.id]);
    expect(await cli("reflection", "retention", "ops")).toMatchObject({ code: 0, stdout: "deleted 1 traces\n" });
    expect((await cli("reflection", "show", "ops")).stdout).toMatch(/^traces 1 /);
    expect((await cli("recall", "ghost", "nginx")).code).toBe(2);
  });

  it("metrics status prints the store's live status; reembed --wait embeds a model change here and the status then names the new model", async () => {
    await seedMemory("runbooks/restart", "Restart the nginx worker, then watch the backlog.");
    await drainEmbeddings(["ops"]);
    const healthy = await cli("metrics", "status", "ops");
    expect(healthy.code, healthy.stderr).toBe(0);
    expect(healthy.stdout).toMatch(/^ops: healthy — .*\n  backlog 0\/1000, parked 0, coverage 100\.0%\n  provider answering; worker /);

    // The operator configures another model: the store's vectors are of the old one.
    configureDimension("256");
    const drifted = await cli("metrics", "status", "ops", "--json");
    expect(drifted.code).toBe(1);
    expect(JSON.parse(drifted.stdout)).toMatchObject({ store: "ops", status: "drifted", configured_model: { dimension: 256 }, drift: { model_changed: true } });

    const reembedded = await cli("reembed", "ops", "--wait");
    expect(reembedded.code, reembedded.stderr).toBe(0);
    expect(reembedded.stdout).toMatch(/^ops: re-embed complete \((\d+)\/\1 done, target [0-9a-f]+\)\n$/);
    const after = await cli("metrics", "status", "ops", "--json");
    expect(after.code, after.stdout).toBe(0);
    const report = JSON.parse(after.stdout);
    expect(report).toMatchObject({ store: "ops", status: "healthy", active_model: { dimension: 256 }, configured_model: { dimension: 256 }, reembed: { status: "done" } });
    // The worker that ran here is listed as the API lists workers (every replica's on PostgreSQL).
    expect(report.workers.length).toBeGreaterThan(0);
    for (const w of report.workers) expect(Object.keys(w)).toEqual(expect.arrayContaining(["worker_id", "pid", "mode", "running", "last_batch_at"]));
    expect(await governanceSql("select actor from audit_log where action = 'store.reembed.start'")).toEqual([{ actor: CLI_ACTOR }]);

    // Nothing left to do: no job starts.
    expect(await cli("reembed", "ops")).toMatchObject({ code: 0, stdout: expect.stringMatching(/^ops: nothing to re-embed \(every item already has a current vector from builtin:dualmind-hash-v1\); no job started\n$/) });
    expect((await cli("metrics", "status", "ghost")).code).toBe(2);
  }, patience(120_000));

  it("the commands that work on SQLite files run there and refuse with DATABASE_URL (exit 2), saying what to use instead", async () => {
    await seedMemory("runbooks/restart", "Restart the nginx worker, then watch the backlog.");
    const bundle = path.join(env.dataDir, "..", `${path.basename(env.dataDir)}-bundle`);
    const ftsOnly = await cli("reindex", "ops", "--fts-only");
    const rebuildIndex = await cli("embeddings", "rebuild-index", "ops");
    const exported = await cli("export", "bundle", "ops", bundle);
    try {
      if (!onPg) {
        expect(ftsOnly).toMatchObject({ code: 0, stdout: expect.stringMatching(/^ops: full-text index rebuilt: 1 chunks in \d+ ms\n$/) });
        expect(rebuildIndex.code, rebuildIndex.stderr).toBe(0);
        expect(exported.code, exported.stderr).toBe(0);
        return;
      }
      expect(ftsOnly.code).toBe(2);
      expect(ftsOnly.stderr).toContain("full-text index is a tsvector column");
      expect(ftsOnly.stderr).toContain("run `dualmind reindex <store>`");
      expect(rebuildIndex.code).toBe(2);
      expect(rebuildIndex.stderr).toContain("REINDEX SCHEMA store_ops");
      expect(exported.code).toBe(2);
      expect(exported.stderr).toContain("dualmind memories export --store S --out DIR");
      expect(fs.existsSync(bundle)).toBe(false);
      const imported = await cli("import", "bundle", bundle, "--as", "copy");
      expect(imported.code).toBe(2);
      expect(imported.stderr).toContain("dualmind memories import --store S --from DIR");
      for (const refused of [["backup", bundle], ["restore", bundle]]) {
        const r = await cli(...refused);
        expect(r.code).toBe(2);
        expect(r.stderr).toContain("pg_dump");
      }
      // Refused before anything was written: no local store appeared in DATA_DIR.
      expect(fs.existsSync(path.join(env.dataDir, "stores", "ops"))).toBe(false);
      expect(fs.existsSync(path.join(env.dataDir, "stores", "copy"))).toBe(false);
      expect(await stores().listStoreNames()).not.toContain("copy");
    } finally {
      fs.rmSync(bundle, { recursive: true, force: true });
    }
  });
});

describe("the ledger and dialectic commands on this backend", () => {
  it("ledger tasks, task and artifact and dialectic verify: --json spells the answers as the API does", async () => {
    const g = governance();
    const hash = "c".repeat(64);
    const agent = { agentId: "agent-a", isAdmin: false, stores: null };
    await g.createTask({ input: { task_id: "cli-t", intent: "check the CLI", spec: {} }, requestedBy: "agent-a" });
    await g.recordRunStart({ taskId: "cli-t", input: { run_id: "cli-r", skill: "lint", input_hash: hash, runner_version: "1", output_hash: hash, exit_code: 0, artifacts: [{ artifact_type: "doc", artifact_id: "d1", store: "ops" }] }, caller: agent });
    const listed = await cli("ledger", "tasks", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ tasks: [{ task_id: "cli-t", requested_by: "agent-a", run_count: 1, created_at: expect.any(Number) }], total: 1, next_offset: null });
    const shown = JSON.parse((await cli("ledger", "task", "agent-a~cli-t", "--json")).stdout);
    expect(shown).toMatchObject({ task: { task_id: "cli-t", required_checks: ["critic", "runner"] }, runs: [{ run_id: "cli-r", task_id: "cli-t", exit_code: 0, input_hash: hash }] });
    const proofs = JSON.parse((await cli("ledger", "artifact", "doc", "d1", "--json")).stdout);
    expect(proofs.provenance[0]).toMatchObject({ artifact_type: "doc", artifact_id: "d1", input_hash: hash, run_id: "cli-r", recorded_by: "agent-a" });
    await g.createDialecticSession({ input: { session_id: "cli-s", topic: "t" }, agentId: "agent-a" });
    await g.postDialecticMessage({ sessionId: "cli-s", agentId: "agent-a", input: { message_type: "thesis", reasoning: "r" } });
    await governanceSql("update dialectic_messages set reasoning = 'edited' where session_id = 'agent-a~cli-s'");
    const verified = await cli("dialectic", "verify", "agent-a~cli-s", "--json");
    expect(verified.code).toBe(1);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: false, broken_at_seq: 1 });
  });
});
