import { decideProposalIn, listProposalsQuerySchema, proposalParams, proposalsIn, rejectProposalSchema, setWritePolicyIn, writePolicyIn } from "../../lib/api/proposals";
import { REVIEW_KINDS, writePolicyInputSchema, type WritePolicy } from "../../lib/index/write-policy";
import { flagString, UsageError, type Command } from "../cli-kit";

/**
 * Writes that wait for review from the command line: a store's write policy and its review queue, as
 * /stores/{store}/policy/write and /stores/{store}/proposals… do (the same audit entries and ledger overrides, the
 * actor `cli:<os user>`), on SQLite or PostgreSQL.
 */

const parseOr = <T>(r: { success: true; data: T } | { success: false; error: { issues: { message: string }[] } }): T => {
  if (!r.success) throw new UsageError(r.error.issues[0].message);
  return r.data;
};

const list = (v: string | undefined) => (v === undefined ? [] : v.split(",").map((s) => s.trim()).filter(Boolean));

const policyText = (p: WritePolicy) => [...REVIEW_KINDS.map((k) => `${k}\t${p.modes[k]}`), `trusted\t${p.trusted.join(", ") || "(none)"}`].join("\n");

function proposalArgs(args: string[]) {
  const [store, kind, id] = args;
  if (!store || !kind || !id) throw new UsageError(`give <store> <kind> <id>; kinds: ${REVIEW_KINDS.join(", ")}`);
  return parseOr(proposalParams.safeParse({ store, kind, id }));
}

export const reviewCommands: Command[] = [
  {
    name: "policy write show",
    usage: "policy write show <store>",
    summary: "a store's write policy: open or review per kind, and the trusted actors",
    run: async ({ args, out }) => {
      if (!args[0]) throw new UsageError("give <store>");
      const p = await writePolicyIn({ store: args[0] });
      out(policyText(p), p);
    },
  },
  {
    name: "policy write set",
    usage: "policy write set <store> [--review k1,k2] [--open k1,k2] [--trusted a,b | --trusted '']",
    summary: "change a store's write policy (kinds: memory, learning, thought, node, relation, frame; trusted: agent ids, token labels, user:<name>)",
    run: async ({ args, flags, out }) => {
      if (!args[0]) throw new UsageError("give <store>");
      const modes = Object.fromEntries([...list(flagString(flags, "open")).map((k) => [k, "open"]), ...list(flagString(flags, "review")).map((k) => [k, "review"])]);
      const trusted = flags.trusted === undefined ? undefined : list(flags.trusted === true ? "" : String(flags.trusted));
      const input = parseOr(writePolicyInputSchema.safeParse({ ...(Object.keys(modes).length ? { modes } : {}), ...(trusted ? { trusted } : {}) }));
      const p = await setWritePolicyIn({ store: args[0], input, who: { cli: true } });
      out(`${policyText(p)}\n(override ${p.override_id})`, p);
    },
  },
  {
    name: "proposals list",
    usage: "proposals list <store> [--kind K] [--actor agent:X] [--limit N] [--offset N]",
    summary: "the review queue: writes waiting for review, newest first",
    run: async ({ args, flags, out }) => {
      if (!args[0]) throw new UsageError("give <store>");
      const q = parseOr(listProposalsQuerySchema.safeParse({ kind: flagString(flags, "kind"), actor: flagString(flags, "actor"), limit: flagString(flags, "limit"), offset: flagString(flags, "offset") }));
      const page = await proposalsIn({ store: args[0], ...q });
      const lines = page.proposals.map((p) => `${new Date(p.proposed_at).toISOString()}\t${p.kind}\t${p.id}\t${p.proposed_by}\t${p.why}${p.flags.length ? ` (${p.flags.map((f) => f.flag).join(", ")})` : ""}\t${(p.excerpt ?? "").replace(/\s+/g, " ").slice(0, 80)}`);
      out([`${page.total} waiting`, ...lines].join("\n"), page);
    },
  },
  {
    name: "proposals approve",
    usage: 'proposals approve <store> <kind> <id> [--reason "why"]',
    summary: "approve a proposal: it answers search, recall and remember at once",
    run: async ({ args, flags, out }) => {
      const reason = flagString(flags, "reason");
      const r = await decideProposalIn({ ...proposalArgs(args), to: "active", reason: reason === undefined ? undefined : parseOr(rejectProposalSchema.safeParse({ reason })).reason, who: { cli: true } });
      out(`${r.kind} ${r.id}: proposed → active (override ${r.override_id})`, r);
    },
  },
  {
    name: "proposals reject",
    usage: 'proposals reject <store> <kind> <id> --reason "why"',
    summary: "reject a proposal: kept with its history, answered by nothing",
    run: async ({ args, flags, out }) => {
      const { reason } = parseOr(rejectProposalSchema.safeParse({ reason: flagString(flags, "reason") ?? "" }));
      const r = await decideProposalIn({ ...proposalArgs(args), to: "rejected", reason, who: { cli: true } });
      out(`${r.kind} ${r.id}: proposed → rejected (override ${r.override_id})`, r);
    },
  },
];
