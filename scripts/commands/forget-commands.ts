import { forgetPolicyIn, forgetRunsIn, runForgettingIn, setForgetPolicyIn } from "../../lib/api/forgetting";
import { FORGET_KINDS, FORGET_LIMITS, forgetPolicyInputSchema, type ForgetRunResult, type KindPolicy, type KindPolicyInput } from "../../lib/index/forgetting";
import { flagString, UsageError, type Command, type Flags } from "../cli-kit";

/**
 * Forgetting by policy from the command line, as GET/PUT /stores/{store}/policy/forget and POST …/run do (the same
 * ledger rows and audit entry, the actor `cli:<os user>`), on SQLite or PostgreSQL. A run is a dry run unless
 * --apply is given.
 */

function storeArg(args: string[]): string {
  if (!args[0]) throw new UsageError("give <store>");
  return args[0];
}

function numberFlag(flags: Flags, name: string): number | null | undefined {
  const v = flagString(flags, name);
  if (v === undefined) return undefined;
  if (v === "off") return null;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new UsageError(`--${name}: a number, or off`);
  return n;
}

const policyLine = (p: KindPolicy) =>
  `${p.kind}\tttl ${p.ttl_days ?? "-"}${p.ttl_days !== null ? ` days since ${p.ttl_since}` : ""}\tcap ${p.max_items ?? "-"}\tunused ${p.unused_days ?? "-"}${p.kind === "memory" ? `\texpires_at ${p.honour_expires_at ? "on" : "off"}` : ""}\tprotected ${p.protected_ids.length}\t(${p.updated_by})`;

const runText = (r: ForgetRunResult & { override_id: string }) =>
  [
    `${r.dry_run ? "dry run (nothing retired; --apply to retire)" : "retired"}: ${r.items.length} item(s); ${r.remaining}${r.remaining_exact ? "" : "+"} remaining past the limit of ${r.limit} (run ${r.run_id}, override ${r.override_id})`,
    ...r.items.map((i) => `${i.kind}\t${i.id}\t${i.rule}\t${i.why}\t${i.title}`),
  ].join("\n");

export const forgetCommands: Command[] = [
  {
    name: "forget policy",
    usage: "forget policy <store>",
    summary: "a store's forgetting policy per kind (memory, learning, trace, thought)",
    run: async ({ args, out }) => {
      const r = await forgetPolicyIn({ store: storeArg(args) });
      out(r.policies.length === 0 ? `store ${r.store} has no forgetting policy: nothing is forgotten` : r.policies.map(policyLine).join("\n"), r);
    },
  },
  {
    name: "forget set",
    usage: "forget set <store> <kind> [--ttl-days N|off] [--ttl-since written|used] [--max-items N|off] [--unused-days N|off] [--expires-at on|off] [--protect id,id…] | --remove",
    summary: "set (or --remove) one kind's forgetting policy; items tagged 'pinned' are never forgotten",
    run: async ({ args, flags, out }) => {
      const store = storeArg(args);
      const kind = args[1] as (typeof FORGET_KINDS)[number];
      if (!FORGET_KINDS.includes(kind)) throw new UsageError(`give <kind>: one of ${FORGET_KINDS.join(", ")}`);
      let policy: KindPolicyInput | null = null;
      if (flags.remove !== true) {
        const expires = flagString(flags, "expires-at");
        const since = flagString(flags, "ttl-since");
        const protect = flagString(flags, "protect");
        policy = {
          ttl_days: numberFlag(flags, "ttl-days"),
          ...(since !== undefined ? { ttl_since: since as "written" | "used" } : {}),
          max_items: numberFlag(flags, "max-items"),
          unused_days: numberFlag(flags, "unused-days"),
          ...(expires !== undefined ? { honour_expires_at: expires === "on" } : {}),
          ...(protect !== undefined ? { protected_ids: protect.split(",").map((s) => s.trim()).filter(Boolean) } : {}),
        };
      }
      const parsed = forgetPolicyInputSchema.safeParse({ policies: { [kind]: policy } });
      if (!parsed.success) throw new UsageError(parsed.error.issues[0].message);
      const r = await setForgetPolicyIn({ store, input: parsed.data, who: { cli: true } });
      out(r.policies.length === 0 ? `store ${store} has no forgetting policy now` : r.policies.map(policyLine).join("\n"), r);
    },
  },
  {
    name: "forget run",
    usage: `forget run <store> [--dry-run] [--apply] [--limit N (1-${FORGET_LIMITS.maxPerRun})]`,
    summary: "run a store's forgetting policy: a dry run lists what would be retired and why; --apply retires them (restorable with `item restore`)",
    run: async ({ args, flags, out }) => {
      const store = storeArg(args);
      if (flags.apply === true && flags["dry-run"] === true) throw new UsageError("--dry-run or --apply, not both");
      const limit = numberFlag(flags, "limit");
      const r = await runForgettingIn({ store, dryRun: flags.apply !== true, limit: limit ?? undefined, who: { cli: true } });
      out(runText(r), r);
    },
  },
  {
    name: "forget runs",
    usage: "forget runs <store>",
    summary: "a store's forgetting runs (newest first) and the items they retired that are still retired",
    run: async ({ args, out }) => {
      const r = await forgetRunsIn({ store: storeArg(args) });
      out(
        [
          ...r.runs.map((x) => `${new Date(x.at).toISOString()}\t${x.dry_run ? "dry" : "real"}\t${x.retired} item(s)\t${Object.entries(x.counts).map(([k, n]) => `${k}=${n}`).join(" ")}\t${x.actor}\t${x.run_id}`),
          ...(r.forgotten.length ? ["forgotten, still retired:", ...r.forgotten.map((f) => `${f.kind}\t${f.id}\t${f.rule}\t${f.why}`)] : []),
        ].join("\n") || "no runs",
        r,
      );
    },
  },
];
