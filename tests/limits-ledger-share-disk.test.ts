import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { resetConfigForTests } from "@/lib/config";
import { governanceSql, ledgerOnDisk, onPg, useTestBackend, type TestEnv } from "./backend";

/**
 * An agent's share of the ledger (DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT) is
 * an honest upper bound of what its rows take on disk: an agent filling its
 * share with any kind of ledger write grows the ledger's real size (SQLite's
 * used pages; PostgreSQL's ledger tables with their indexes and TOAST) by at
 * most its share, so a ledger a few shares large still has room for others.
 */
let env: TestEnv;
const SHARE = 1_048_576;
/** Real growth may pass the share by this much: the pages a size measure rounds to (PostgreSQL's free-space maps). */
const SLACK = 65_536;
/**
 * The share of the kinds whose rows are a few hundred bytes: a quarter of SHARE fills with a quarter of the writes (a
 * thousand small tasks would take most of this file's time), still a hundred rows or more over many pages. They take
 * well under what they count on disk (under 0.8 of it, rounding to pages included), so an undercount that SLACK's
 * larger part of this share would hide is one the full share would miss too.
 */
const SMALL_ROW_SHARE = SHARE / 4;

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT: String(SHARE), DUALMIND_MAX_OPEN_TASKS_PER_AGENT: "100000", DUALMIND_MAX_OPEN_REVIEWS_PER_AGENT: "100000" });
});
afterAll(async () => env?.cleanup());

const counted = async (agentId: string) => Number((await governanceSql<{ bytes: unknown }>("select bytes from agent_ledger_usage where agent_id = ?", [agentId]))[0]?.bytes ?? 0);
const caller = (agentId: string) => ({ agentId, isAdmin: false, stores: null });
const hex = (i: number) => i.toString(16).padStart(64, "0");
const rnd = (n: number, seed: number) => {
  let s = "";
  let x = seed * 2654435761;
  while (s.length < n) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += x.toString(36);
  }
  return s.slice(0, n);
};

type Writer = (agentId: string, i: number) => Promise<unknown>;
/**
 * Runs and validations go to one of a few host tasks made before the fill: a write re-reads its task's runs and
 * validations (the verdict), so a thousand on one task would cost the square of what the fill measures.
 */
const HOSTS = 32;
const hostOf = (i: number) => `host-${i % HOSTS}`;
const hosts = async (agentId: string) => {
  for (let h = 0; h < HOSTS; h++) await governance().createTask({ input: { task_id: hostOf(h), intent: "x", spec: {} }, requestedBy: agentId });
};
/** Each kind of write an agent makes, small rows and large. */
const kinds: Record<string, { setup?: (agentId: string) => Promise<void>; write: Writer; share?: number }> = {
  "small tasks": { share: SMALL_ROW_SHARE, write: (a, i) => governance().createTask({ input: { task_id: `t${i}`, intent: "x", spec: {} }, requestedBy: a }) },
  "large tasks": { write: (a, i) => governance().createTask({ input: { task_id: `t${i}-${rnd(50, i)}`, intent: rnd(2000, i), spec: { text: rnd(30_000, i) } }, requestedBy: a }) },
  "tasks with assignees": { write: (a, i) => governance().createTask({ input: { task_id: `t${i}-${rnd(50, i)}`, intent: "x", spec: {}, assignees: Array.from({ length: 50 }, (_, j) => `agent-${j}-${rnd(40, i + j)}`) }, requestedBy: a }) },
  "small runs": { setup: hosts, share: SMALL_ROW_SHARE, write: (a, i) => governance().recordRunStart({ taskId: hostOf(i), input: { run_id: `r${i}`, skill: "s", input_hash: hex(i), runner_version: "1" }, caller: caller(a) }) },
  "runs with artifacts": {
    setup: hosts,
    write: (a, i) =>
      governance().recordRunStart({ taskId: hostOf(i), input: { run_id: `r${i}`, skill: rnd(200, i), input_hash: hex(i), runner_version: "1", output_hash: hex(i), exit_code: 0, output_ref: rnd(1000, i), artifacts: Array.from({ length: 40 }, (_, j) => ({ artifact_type: "file", artifact_id: rnd(200, i * 100 + j), store: "default" })) }, caller: caller(a) }),
  },
  "small validations": { setup: hosts, share: SMALL_ROW_SHARE, write: (a, i) => governance().recordValidation({ taskId: hostOf(i), input: { validation_id: `v${i}`, critic_passed: true, runner_passed: null }, caller: caller(a) }) },
  "large validations": { setup: hosts, write: (a, i) => governance().recordValidation({ taskId: hostOf(i), input: { validation_id: `v${i}-${rnd(50, i)}`, critic_passed: true, runner_passed: null, details: { text: rnd(20_000, i) } }, caller: caller(a) }) },
  "small provenance": { write: (a, i) => governance().recordProvenanceBatch({ input: { records: Array.from({ length: 250 }, (_, j) => ({ artifact_type: "a", artifact_id: `${i}-${j}`, store: "s", input_hash: hex(j) })) }, recordedBy: a, caller: caller(a) }) },
  "large provenance": {
    write: (a, i) =>
      governance().recordProvenanceBatch({ input: { records: Array.from({ length: 100 }, (_, j) => ({ artifact_type: rnd(64, j), artifact_id: rnd(256, i * 1000 + j), store: rnd(63, j), model_name: rnd(200, j), model_version: rnd(100, j), fingerprint: rnd(200, j), chunking_version: rnd(100, j), input_hash: hex(j) })) }, recordedBy: a, caller: caller(a) }),
  },
  "small overrides": { share: SMALL_ROW_SHARE, write: (a, i) => governance().recordOverride({ input: { override_id: `o${i}`, note: "n" }, actor: a, tokenLabel: "t", caller: caller(a) }) },
  "large overrides": { write: (a, i) => governance().recordOverride({ input: { override_id: `o${i}-${rnd(50, i)}`, note: rnd(4000, i) }, actor: a, tokenLabel: "t", caller: caller(a) }) },
  "reviews and their messages": {
    write: async (a, i) => {
      await governance().createDialecticSession({ input: { session_id: `s${i}-${rnd(50, i)}`, topic: rnd(500, i) }, agentId: a });
      await governance().postDialecticMessage({ sessionId: `s${i}-${rnd(50, i)}`, agentId: a, input: { message_id: `m${i}`, message_type: "thesis", reasoning: rnd(20_000, i), root_cause: rnd(5000, i) } });
    },
  },
};

/** Write until the agent's share refuses it (422 naming the limit); the real growth of the ledger meanwhile. */
async function fill(agentId: string, kind: (typeof kinds)[string]): Promise<{ writes: number; grown: number; counted: number }> {
  await kind.setup?.(agentId);
  const before = await ledgerOnDisk();
  const countedBefore = await counted(agentId);
  let writes = 0;
  for (;;) {
    try {
      await kind.write(agentId, writes);
      writes++;
    } catch (e) {
      expect((e as { details?: { limit?: string }[] }).details?.[0]?.limit ?? String(e)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT");
      break;
    }
    if (writes > 100_000) throw new Error("the share never refused");
  }
  return { writes, grown: (await ledgerOnDisk()) - before, counted: (await counted(agentId)) - countedBefore };
}

describe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT counts what an agent's rows take on disk", () => {
  for (const [name, kind] of Object.entries(kinds)) {
    it(`${name}: filling the share grows the ledger by at most the share`, async () => {
      const agentId = `filler-${name.replace(/\W+/g, "-")}`;
      const share = kind.share ?? SHARE;
      process.env.DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT = String(share);
      resetConfigForTests();
      try {
        const { writes, grown, counted: c } = await fill(agentId, kind);
        console.log(`[ledger share] ${onPg ? "pg" : "sqlite"} ${name}: share ${share}, ${writes} writes, counted ${c}, on disk ${grown} (${(grown / Math.max(1, c)).toFixed(2)} of counted)`);
        expect(writes).toBeGreaterThan(0);
        // No write takes the agent past its share, and what it counts bounds what the ledger grew by.
        expect(await counted(agentId)).toBeLessThanOrEqual(share);
        expect(grown).toBeLessThanOrEqual(share + SLACK);
        expect(grown).toBeLessThanOrEqual(c + SLACK);
      } finally {
        process.env.DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT = String(SHARE);
        resetConfigForTests();
      }
    }, 180_000);
  }
});

describe("one agent at its share leaves the ledger room for the others", () => {
  it("a ledger two shares larger than what it holds: one agent fills its share with provenance, another's first task still succeeds", async () => {
    const room = (await ledgerOnDisk()) + 2 * SHARE;
    process.env.DUALMIND_GOVERNANCE_MAX_BYTES = String(room);
    resetConfigForTests();
    try {
      const hog = caller("hog");
      let refused: { status?: number; details?: { limit?: string }[] } | undefined;
      for (let i = 0; i < 200 && !refused; i++) {
        try {
          await governance().recordProvenanceBatch({ input: { records: Array.from({ length: 1000 }, (_, j) => ({ artifact_type: "a", artifact_id: `hog-${i}-${j}`, store: "default", input_hash: hex(j), chunking_version: "c".repeat(100) })) }, recordedBy: "hog", caller: hog });
        } catch (e) {
          refused = e as typeof refused;
        }
      }
      // The hog is stopped by its own share (422), not by a full ledger (507).
      expect(refused?.details?.[0]?.limit).toBe("DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT");
      expect(await ledgerOnDisk()).toBeLessThanOrEqual(room);
      const first = await governance().createTask({ input: { intent: "another agent's first task", spec: {} }, requestedBy: "bystander" });
      expect(first.created).toBe(true);
    } finally {
      delete process.env.DUALMIND_GOVERNANCE_MAX_BYTES;
      resetConfigForTests();
    }
  }, 180_000);
});

describe("the migration that counts the rows on disk", () => {
  it("recounts every agent's total as the triggers keep it (inserts, updates and deletes)", async () => {
    // Rows the triggers counted above, and updates: a run finished, a task's verdict moved by its runs and validations.
    const agent = caller("updater");
    await governance().createTask({ input: { task_id: "u", intent: "x", spec: { a: 1 }, assignees: ["someone"] }, requestedBy: "updater" });
    await governance().recordRunStart({ taskId: "u", input: { run_id: "r", skill: "s", input_hash: hex(1), runner_version: "1" }, caller: agent });
    await governance().recordRunFinish({ taskId: "u", runId: "r", input: { output_hash: hex(2), exit_code: 0, artifacts: [{ artifact_type: "file", artifact_id: "f", store: "default" }] }, caller: agent });
    await governance().recordValidation({ taskId: "u", input: { critic_passed: true, runner_passed: true, details: { ok: 1 } }, caller: agent });
    await governanceSql("delete from provenance where recorded_by = ? and artifact_id like ?", ["filler-small-provenance", "1-%"]);
    const totals = async () => Object.fromEntries((await governanceSql<{ agent_id: string; bytes: unknown }>("select agent_id, bytes from agent_ledger_usage where bytes <> 0 order by agent_id")).map((r) => [r.agent_id, Number(r.bytes)]));
    const kept = await totals();
    expect(Object.keys(kept).length).toBeGreaterThan(10);
    // The migration's recount, run again over the same rows.
    const files = onPg ? ["drizzle/pg/governance/0010_agent_usage_on_disk.sql", "drizzle/pg/governance/0011_agent_usage_audit_rows.sql"] : ["drizzle/governance/0018_agent_usage_on_disk.sql", "drizzle/governance/0019_agent_usage_audit_rows.sql"];
    const recount = files
      .flatMap((file) => readFileSync(file, "utf8").split("--> statement-breakpoint"))
      .map((x) => x.trim())
      .filter((x) => /^(DELETE FROM|INSERT INTO) .agent_ledger_usage/.test(x));
    expect(recount.length).toBe(9);
    for (const statement of recount) await governanceSql(statement);
    expect(await totals()).toEqual(kept);
  });
});

describe("the count follows the schema", () => {
  const TABLES = ["tasks", "skill_runs", "validations", "provenance", "overrides", "dialectic_sessions", "dialectic_messages"];
  it("each ledger table's trigger counts an entry in every index it has, and (SQLite) every column", async () => {
    for (const table of TABLES) {
      if (onPg) {
        const [{ def }] = await governanceSql<{ def: string }>("select pg_get_triggerdef(t.oid) as def from pg_trigger t where t.tgname = 'agent_ledger_usage' and t.tgrelid = ?::regclass", [table]);
        const [{ n }] = await governanceSql<{ n: unknown }>("select count(*) as n from pg_index where indrelid = ?::regclass", [table]);
        // The agent's column, then one argument per index.
        expect((def.match(/'[^']*'/g) ?? []).length - 1, table).toBe(Number(n));
        continue;
      }
      const [{ sql: trigger }] = await governanceSql<{ sql: string }>("select sql from sqlite_master where type = 'trigger' and name = ?", [`agent_ledger_usage_${table}_ins`]);
      const indexes = (await governanceSql<{ origin: string }>(`select origin from pragma_index_list('${table}')`)).filter((i) => i.origin !== "pk").length + 1;
      expect(trigger.split("48 + 2 *").length - 1, table).toBe(indexes);
      for (const { name } of await governanceSql<{ name: string }>(`select name from pragma_table_info('${table}')`)) expect(trigger, `${table}.${name}`).toContain(`new.\`${name}\``);
    }
  });
});
