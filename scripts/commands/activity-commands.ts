import { z } from "zod";
import { activityFilterSchema, activitySummarySchema, listActivity, summarizeActivity, type ActivityEntry } from "../../lib/governance/activity";
import { flagString, UsageError, type Command, type Flags } from "../cli-kit";

const FILTER_FLAGS = ["agent", "actor", "action", "store", "target", "since", "until", "before", "limit"] as const;

function filterFrom<S extends z.ZodType>(schema: S, flags: Flags, names: readonly string[]): z.output<S> {
  const raw: Record<string, string> = {};
  for (const name of names) {
    const value = flagString(flags, name);
    if (value !== undefined) raw[name] = value;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => `${i.path.join(".") || "filter"}: ${i.message}`).join("; "));
  return parsed.data;
}

const line = (e: ActivityEntry) => `${new Date(e.ts).toISOString()}  #${e.id}  ${e.actor}  ${e.action}${e.target ? `  ${e.target}` : ""}${e.reason ? `  (${e.reason})` : ""}`;

export const activityCommands: Command[] = [
  {
    name: "activity",
    usage: "activity [--agent ID] [--actor A] [--action A|family.] [--store S] [--target T] [--since T] [--until T] [--before ID] [--limit N]",
    summary: "what agents and people did, from the audit log, newest first (times: ISO 8601 or epoch ms); --before pages on",
    run: async ({ flags, out }) => {
      const page = await listActivity({ filter: filterFrom(activityFilterSchema, flags, FILTER_FLAGS) });
      const more = page.next_cursor === null ? "" : `\n… older: --before ${page.next_cursor}${page.complete ? "" : " (the scan window ended before the page filled)"}`;
      out(page.entries.length ? page.entries.map(line).join("\n") + more : `no activity matches${more}`, page);
    },
  },
  {
    name: "activity summary",
    usage: "activity summary --agent ID | --actor A [--store S] [--since T] [--until T]",
    summary: "what one agent or actor did over a time range: writes, reviews, searches, recalls and remembers (with failures), and counts per action",
    run: async ({ flags, out }) => {
      const summary = await summarizeActivity({ filter: filterFrom(activitySummarySchema, flags, ["agent", "actor", "store", "since", "until"]) });
      const rows = summary.by_action.map((r) => `  ${String(r.count).padStart(7)}  ${r.action}`).join("\n");
      const retrieval = summary.retrieval.map((t) => `${t.kind} ${t.count}${t.failures ? ` (${t.failures} failed)` : ""}`).join(", ");
      const head = `${summary.actor}: ${summary.total} audited action(s) — writes ${summary.writes}, reviews ${summary.reviews}${retrieval ? `; ${retrieval}; failures ${summary.failures}` : ""}`;
      out(`${head}${summary.complete ? "" : " (newest part of the range only)"}\n${rows}`, summary);
    },
  },
];
