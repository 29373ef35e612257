import { actorOf } from "../../lib/auth/actor";
import { recallBackend } from "../../lib/recall/backend";
import { recallInputSchema } from "../../lib/recall/recall";
import { reflectionSettingsPatchSchema } from "../../lib/recall/settings";
import { reasonLine } from "../../lib/retrieval";
import { flagString, UsageError, type Command } from "../cli-kit";
import { flagLines } from "../../lib/poison";

/**
 * The reflection commands go through recallBackend(), as POST /stores/{store}/recall
 * and GET,PUT /stores/{store}/reflection do: the store's SQLite index.db by
 * default, its PostgreSQL schema with DATABASE_URL (an unknown store is a 404 on both).
 */

/** The store named by the first argument. */
function storeArg(args: string[]): string {
  if (!args[0]) throw new UsageError("store name is required");
  return args[0];
}

/** `top_k=3 retention.max_traces=5000` → a settings patch (values parsed as JSON, else kept as text). */
function patchFromAssignments(assignments: string[]): Record<string, unknown> {
  if (assignments.length === 0) throw new UsageError("give at least one field=value");
  const patch: Record<string, Record<string, unknown> | unknown> = {};
  for (const a of assignments) {
    const eq = a.indexOf("=");
    if (eq <= 0) throw new UsageError(`expected field=value, got ${a}`);
    const [key, raw] = [a.slice(0, eq), a.slice(eq + 1)];
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // Plain text (e.g. strategy=stratified) stays a string.
    }
    const [head, sub] = key.split(".", 2);
    if (sub) patch[head] = { ...((patch[head] as Record<string, unknown> | undefined) ?? {}), [sub]: value };
    else patch[head] = value;
  }
  return patch;
}

export const recallCommands: Command[] = [
  {
    name: "recall",
    usage: "recall <store> <query...> [--top-k N] [--signals hybrid|vector|lexical]",
    summary: "ask a store's reflections: similar past traces, learnings, warnings",
    run: async ({ args, flags, out }) => {
      const store = storeArg(args);
      const query = args.slice(1).join(" ");
      if (!query) throw new UsageError("query text is required");
      const topK = flagString(flags, "top-k");
      const signals = recallInputSchema.shape.signals.parse(flagString(flags, "signals"));
      const r = await recallBackend().recall({ store, agentId: actorOf("cli"), input: { query, top_k: topK ? Number(topK) : undefined, signals } });
      const lines = [
        `mode: ${r.mode}${r.fallback ? ` (fallback: ${r.fallback.reason}: ${r.fallback.message})` : ""}, ${r.latency_ms} ms, event ${r.event_id}`,
        ...(r.reason ? [`reason: ${reasonLine(r.reason)}`] : []),
        ...(r.guidance.past_failure_warning ? [`WARNING: ${r.guidance.past_failure_warning.message}`] : []),
        ...r.guidance.aligned_preferences.map((p) => `preference: ${p.predicate} (${p.score}): ${p.description}`),
        ...r.traces.flatMap((t) => [`trace ${t.id}\t${t.score}\t${t.outcome}\t${t.summary}`, ...flagLines({ flags: t.flags })]),
        ...r.learnings.flatMap((l) => [`learning ${l.id}\t${l.score}\t${l.summary}`, ...flagLines({ flags: l.flags })]),
      ];
      out(lines.join("\n"), r);
    },
  },
  {
    name: "reflection show",
    usage: "reflection show <store>",
    summary: "reflection settings, counts, hit rate and precision of a store",
    run: async ({ args, out }) => {
      const o = await recallBackend().getReflectionOverview({ store: storeArg(args) });
      out(
        [
          `traces ${o.counts.traces} (${o.counts.failures} failures, ${o.counts.skipped_backpressure} without vector), learnings ${o.counts.learnings}, awaiting vectors ${o.counts.awaiting_vector}`,
          `recalls ${o.totals.recalls}, hit rate ${o.totals.hit_rate ?? "-"}, rated ${o.totals.rated}, precision ${o.totals.precision ?? "-"}`,
          `settings ${JSON.stringify(o.settings)}`,
        ].join("\n"),
        o,
      );
    },
  },
  {
    name: "reflection set",
    usage: "reflection set <store> <field=value>... [--reason R]",
    summary: "change reflection settings (audited), e.g. min_score=0.3 retention.ttl_days=90",
    run: async ({ args, flags, out }) => {
      const store = storeArg(args);
      const patch = reflectionSettingsPatchSchema.parse(patchFromAssignments(args.slice(1)));
      const settings = await recallBackend().updateReflectionSettings({ store, input: { settings: patch, reason: flagString(flags, "reason") }, actor: actorOf("cli") });
      out(`reflection settings of ${store}: ${JSON.stringify(settings)}`, settings);
    },
  },
  {
    name: "reflection retention",
    usage: "reflection retention <store>",
    summary: "apply the store's trace retention now (TTL, cap)",
    run: async ({ args, out }) => {
      const r = await recallBackend().runTraceRetention({ store: storeArg(args) });
      out(`deleted ${r.deleted} traces`, r);
    },
  },
  {
    name: "reflection metrics",
    usage: "reflection metrics <store> [--bucket-hours N] [--days D]",
    summary: "recall hit rate, precision and latency per time bucket",
    run: async ({ args, flags, out }) => {
      const bucketHours = Number(flagString(flags, "bucket-hours") ?? 1);
      const days = Number(flagString(flags, "days") ?? 1);
      if (!(bucketHours > 0) || !(days > 0)) throw new UsageError("--bucket-hours and --days must be positive numbers");
      const bucketMs = Math.round(bucketHours * 3_600_000);
      const since = Date.now() - days * 86_400_000;
      const buckets = await recallBackend().getRecallMetrics({ store: storeArg(args), bucketMs, since });
      out(
        buckets.map((b) => `${new Date(b.start).toISOString()}\trecalls ${b.recalls}\thit rate ${b.hit_rate.toFixed(2)}\tprecision ${b.precision?.toFixed(2) ?? "-"}\tp50 ${b.p50_ms} ms\tp95 ${b.p95_ms} ms`).join("\n") || "(no recalls)",
        { buckets },
      );
    },
  },
];
