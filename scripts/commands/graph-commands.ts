import { ENTITY_TYPES, FRAMEWORKS } from "../../lib/db/schema/graph";
import { graphBackend } from "../../lib/graph/backend";
import { actorOf } from "../../lib/auth/actor";
import { flagLines } from "../../lib/poison";
import { reasonLine } from "../../lib/retrieval";
import { flagString, UsageError, type Command } from "../cli-kit";

/**
 * The graph commands go through graphBackend(), as the routes and MCP tools
 * do: the store's SQLite index.db by default, its PostgreSQL schema with
 * DATABASE_URL (an unknown store is a 404 on both).
 */

/** The store named by the first argument. */
function storeArg(args: string[]): string {
  if (!args[0]) throw new UsageError("store name is required");
  return args[0];
}

export const graphCommands: Command[] = [
  {
    name: "graph remember",
    usage: "graph remember <store> <query...> [--core] [--limit N]",
    summary: "fused remember over a store's thoughts and graph, with each score's breakdown",
    run: async ({ args, flags, out }) => {
      const store = storeArg(args);
      const query = args.slice(1).join(" ");
      if (!query) throw new UsageError("a query is required");
      const r = await graphBackend().remember({ store, input: { query, include_core: flags.core === true, limit: Number(flagString(flags, "limit") ?? 10) } });
      const lines = [
        `mode ${r.mode}${r.fallback ? ` (fallback: ${r.fallback.reason}: ${r.fallback.message})` : ""}; score = ${r.formula}`,
        ...(r.reason ? [`reason: ${reasonLine(r.reason)}`] : []),
        ...r.results.flatMap((x) => {
          const b = x.breakdown;
          return [
            `${x.score.toFixed(3)}\t${x.store}\t${x.kind === "node" ? x.entity_type : "thought"}\t${x.title}\tsem=${b.semantic.toFixed(3)} rec=${b.recency.toFixed(3)} epi=${b.episodic.toFixed(2)} proc=${b.procedure_match.toFixed(2)} edge=${b.edge_weight.toFixed(2)} inc=${b.inconsistency.toFixed(2)}`,
            ...flagLines({ flags: x.flags }),
          ];
        }),
      ];
      out(lines.join("\n"), r);
    },
  },
  {
    name: "graph think",
    usage: `graph think <store> <content...> [--chain C] [--framework ${FRAMEWORKS.join("|")}]`,
    summary: "write a thought (its vector is queued)",
    run: async ({ args, flags, out }) => {
      const thought = await graphBackend().think({
        store: storeArg(args),
        input: { content: args.slice(1).join(" "), chain_id: flagString(flags, "chain"), framework: flagString(flags, "framework") as (typeof FRAMEWORKS)[number] | undefined },
        actor: actorOf("cli"),
      });
      out([`thought ${thought.id}${thought.chain_id ? ` (${thought.chain_id} #${thought.thought_number})` : ""}`, ...flagLines({ flags: thought.flags })].join("\n"), thought);
    },
  },
  {
    name: "graph nodes",
    usage: `graph nodes <store> [--q WORDS] [--type ${ENTITY_TYPES.join("|")}] [--limit N]`,
    summary: "list or search a store's graph nodes",
    run: async ({ args, flags, out }) => {
      const r = await graphBackend().listNodes({
        store: storeArg(args),
        filter: { q: flagString(flags, "q"), entity_type: flagString(flags, "type") as (typeof ENTITY_TYPES)[number] | undefined, limit: flagString(flags, "limit") ?? 50 },
      });
      out(r.nodes.flatMap((n) => [`${n.id}\t${n.entity_type}\t${n.display_name}`, ...flagLines({ flags: n.flags })]).join("\n") || "no nodes", r);
    },
  },
  {
    name: "graph sweep",
    usage: "graph sweep <store>",
    summary: "delete expired working-memory keys",
    run: async ({ args, out }) => {
      const swept = await graphBackend().sweepWorkingMemory({ store: storeArg(args) });
      out(`swept ${swept} expired key${swept === 1 ? "" : "s"}`, { swept });
    },
  },
];
