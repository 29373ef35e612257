import fs from "node:fs";
import { formatTime } from "../../lib/format";
import { PRIVATE_FILE_MODE } from "../../lib/private-fs";
import { governance } from "../../lib/backend/governance";
import { verdictLabel } from "../../lib/governance/ledger";
import { flagString, UsageError, type Command } from "../cli-kit";

const ACTOR = `cli:${process.env.USER ?? "local"}`;

export const ledgerCommands: Command[] = [
  {
    name: "ledger tasks",
    usage: "ledger tasks [--requested-by A] [--skill S] [--outcome pending|passed|failed] [--limit N]",
    summary: "list governance tasks, newest first",
    run: async ({ flags, out }) => {
      const result = await governance().listTasks({
        input: {
          requested_by: flagString(flags, "requested-by"),
          skill: flagString(flags, "skill"),
          outcome: flagString(flags, "outcome") as "pending" | "passed" | "failed" | undefined,
          limit: flagString(flags, "limit") ?? 50,
        },
      });
      out(result.tasks.map((t) => `${t.task_id}\t${verdictLabel(t.verdict)}\t${t.requested_by}\t${formatTime(t.created_at)}\t${t.intent}`).join("\n") || "no tasks", result);
    },
  },
  {
    name: "ledger task",
    usage: "ledger task <task-id>",
    summary: "show a task with its runs, validations and verdict",
    run: async ({ args, out }) => {
      if (!args[0]) throw new UsageError("task id is required");
      const s = await governance().getTaskStatus({ taskId: args[0] });
      const lines = [
        `${s.task.task_id}: ${s.task.intent} (requested by ${s.task.requested_by})`,
        `verdict: ${verdictLabel(s.verdict.verdict)} — ${s.verdict.reasons.join("; ")}`,
        ...s.runs.map((r) => `run ${r.run_id} ${r.skill} ${r.status} exit=${r.exit_code ?? "-"} in=${r.input_hash.slice(0, 12)} out=${r.output_hash?.slice(0, 12) ?? "-"}`),
        ...s.validations.map((v) => `validation ${v.validation_id} critic=${v.critic_passed} runner=${v.runner_passed}`),
        ...s.overrides.map((o) => `override by ${o.actor}: ${o.note}`),
      ];
      out(lines.join("\n"), s);
    },
  },
  {
    name: "ledger artifact",
    usage: "ledger artifact <artifact-type> <artifact-id> [--store S]",
    summary: "where did this artifact come from (provenance, runs, verdicts)",
    run: async ({ args, flags, out }) => {
      if (!args[0] || !args[1]) throw new UsageError("artifact type and id are required");
      const p = await governance().getProofsByArtifact({ input: { artifact_type: args[0], artifact_id: args[1], store: flagString(flags, "store") } });
      const lines = [
        ...p.provenance.map((f) => `${formatTime(f.created_at)} ${f.store} model=${f.model_name || "-"} ${f.model_version} input=${f.input_hash.slice(0, 12)} run=${f.run_id ?? "-"}`),
        ...p.tasks.map((t) => `task ${t.task.task_id} (${verdictLabel(t.verdict)}): ${t.task.intent}`),
      ];
      out(lines.join("\n") || "nothing in the ledger produced this artifact", p);
    },
  },
  {
    name: "dialectic export",
    usage: "dialectic export [--session ID] [--out FILE]",
    summary: "write one or all dialectic sessions as a JSON snapshot",
    run: async ({ flags, out }) => {
      const snapshot = await governance().exportDialecticSessions({ sessionId: flagString(flags, "session") });
      const file = flagString(flags, "out");
      const text = JSON.stringify(snapshot, null, 2) + "\n";
      if (!file) {
        process.stdout.write(text);
        return;
      }
      fs.writeFileSync(file, text, { mode: PRIVATE_FILE_MODE });
      out(`wrote ${snapshot.sessions.length} session(s) to ${file}`, { file, sessions: snapshot.sessions.length });
    },
  },
  {
    name: "dialectic restore",
    usage: "dialectic restore <snapshot.json>",
    summary: "admin restore of sessions from an export (verified, never overwrites, audited)",
    run: async ({ args, out }) => {
      if (!args[0]) throw new UsageError("snapshot file is required");
      const result = await governance().restoreDialecticSessions({ snapshot: JSON.parse(fs.readFileSync(args[0], "utf8")), actor: ACTOR });
      out(`restored ${result.restored} session(s) with ${result.messages} message(s); ${result.unchanged} already present`, result);
    },
  },
  {
    name: "dialectic verify",
    usage: "dialectic verify <session-id>",
    summary: "check a session's message signature chain (exit 1 if broken)",
    run: async ({ args, out }) => {
      if (!args[0]) throw new UsageError("session id is required");
      const v = await governance().verifyDialecticSession({ sessionId: args[0] });
      out(v.ok ? `signatures ok (${v.messages} messages)` : `signatures BROKEN at message ${v.broken_at_seq}: ${v.reason}`, v);
      return v.ok ? 0 : 1;
    },
  },
  {
    name: "dialectic sweep",
    usage: "dialectic sweep",
    summary: "fail active sessions idle past their timeout (audited)",
    run: async ({ out }) => {
      const { failed } = await governance().sweepIdleSessions({ actor: ACTOR });
      out(failed.length ? `failed ${failed.length} idle session(s): ${failed.join(", ")}` : "no idle sessions", { failed });
    },
  },
];
