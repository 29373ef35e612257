import { generateDemoRollups, generateDemoSnapshots } from "../../lib/metrics/demo";
import { storeHealthReportFor } from "../../lib/metrics/health";
import { runMetricsPass } from "../../lib/metrics/loop";
import { metricsBackend } from "../../lib/metrics/backend";
import { stores } from "../../lib/stores/backend";
import { flagString, UsageError, type Command } from "../cli-kit";

const HOUR_MS = 3_600_000;

export const healthCommands: Command[] = [
  {
    name: "metrics status",
    usage: "metrics status <store>",
    summary: "a store's live status (the same as GET /stores/{store}/health), reason and fixing action, backlog, drift, coverage, worker and recall quality; exit 1 unless healthy",
    run: async ({ args, out }) => {
      if (!args[0]) throw new UsageError("store name is required");
      // The report GET /stores/{store}/health answers, from this backend (PostgreSQL's lists every replica's workers).
      const r = await storeHealthReportFor({ store: args[0], principal: "operator" });
      const worker = r.workers.find((w) => w.running);
      out(
        `${r.store}: ${r.status} — ${r.status_reason}${r.action ? `\n  fix: ${r.action.label} (${r.action.href})` : ""}\n  backlog ${r.backlog.pending}/${r.backlog.watermark}, parked ${r.backlog.parked}, coverage ${r.coverage_pct?.toFixed(1) ?? "—"}%` +
          `\n  provider ${r.provider.ok ? "answering" : `down: ${r.provider.error}`}; worker ${worker ? `${worker.mode === "in_server" ? "in a server" : "separate"} (pid ${worker.pid}), last batch ${worker.last_batch_at ? new Date(worker.last_batch_at).toISOString() : "none"}` : "not running"}`,
        r,
      );
      return r.status === "healthy" ? 0 : 1;
    },
  },
  {
    name: "metrics snapshot",
    usage: "metrics snapshot [--prune]",
    summary: "record a health snapshot of every store now (the server does this once a minute); --prune applies retention",
    run: async ({ flags, out }) => {
      await runMetricsPass({ prune: flags.prune === true });
      out("snapshot recorded");
    },
  },
  {
    name: "metrics prune",
    usage: "metrics prune",
    summary: "apply metrics retention: minute and quarter-hour rows older than a week, anything older than a year",
    run: async ({ out }) => {
      const r = await metricsBackend().pruneMetrics();
      out(`removed ${r.minuteRows} minute rows, ${r.quarterHourRows} quarter-hour rows and ${r.yearOld} rows older than a year`, r);
    },
  },
  {
    name: "metrics demo",
    usage: "metrics demo <store...> [--hours N]",
    summary: "write demo metrics (latency rollups and health snapshots, with a gap and a model change) for the last N hours (default 24)",
    run: async ({ args, flags, out }) => {
      if (args.length === 0) throw new UsageError("name at least one store");
      // The demo's model change ends at each store's model now, so the live snapshots that follow draw no second change.
      const currentModels: Record<string, string | null> = {};
      for (const s of args) {
        await stores().describeStore({ store: s });
        currentModels[s] = (await storeHealthReportFor({ store: s, principal: "operator" })).drift?.active_fingerprint_id ?? null;
      }
      const hours = Number(flagString(flags, "hours") ?? 24);
      if (!Number.isInteger(hours) || hours < 1 || hours > 24 * 30) throw new UsageError("--hours must be a whole number from 1 to 720");
      const to = Date.now();
      const from = to - hours * HOUR_MS;
      const rows = generateDemoRollups({ from, to, stepMs: 60_000 });
      const snapshots = generateDemoSnapshots({ stores: args, from, to, stepMs: 60_000, currentModels });
      const rollups = await metricsBackend().saveRollups({ rows });
      await metricsBackend().saveStoreSnapshots({ snapshots });
      out(`wrote ${rollups} minute rollups and ${snapshots.length} snapshots for ${args.join(", ")}`, { rollups, snapshots: snapshots.length });
    },
  },
];
