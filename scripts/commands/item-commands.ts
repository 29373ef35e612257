import { decideItemIn, itemHistoryIn } from "../../lib/api/items";
import { contradictionsQuerySchema, listContradictionsIn } from "../../lib/api/contradictions";
import { itemDecisionSchema, itemIdSchema, itemKindSchema, ITEM_KINDS, type ItemTransition } from "../../lib/index/item-state";
import { flagString, UsageError, type Command } from "../cli-kit";

/**
 * Governed memory from the command line: one item of a store by kind and id, as POST
 * /stores/{store}/items/{kind}/{id}/invalidate|restore and GET …/history do (the same
 * ledger row and audit entry, the actor `cli:<os user>`), on SQLite or PostgreSQL.
 */

function itemArgs(args: string[]) {
  const [store, kind, id] = args;
  if (!store || !kind || !id) throw new UsageError(`give <store> <kind> <id>; kinds: ${ITEM_KINDS.join(", ")}`);
  const k = itemKindSchema.safeParse(kind);
  if (!k.success) throw new UsageError(`unknown kind ${kind}; kinds: ${ITEM_KINDS.join(", ")}`);
  const i = itemIdSchema.safeParse(id);
  if (!i.success) throw new UsageError(i.error.issues[0].message);
  return { store, kind: k.data, id: i.data };
}

function reasonFlag(flags: Parameters<typeof flagString>[0]): string {
  const parsed = itemDecisionSchema.safeParse({ reason: flagString(flags, "reason") ?? "" });
  if (!parsed.success) throw new UsageError(parsed.error.issues[0].message);
  return parsed.data.reason;
}

const line = (t: ItemTransition) => `${new Date(t.at).toISOString()}\t${t.from} → ${t.to}\t${t.by}\t${t.reason}`;

function decision(to: "retired" | "active"): Command {
  const verb = to === "retired" ? "invalidate" : "restore";
  return {
    name: `item ${verb}`,
    usage: `item ${verb} <store> <kind> <id> --reason "why"`,
    summary: to === "retired" ? "retire one item (memory, learning, trace, thought, node, relation, frame): kept with its history, no longer retrieved" : "make a retired item active again, unchanged",
    run: async ({ args, flags, out }) => {
      const r = await decideItemIn({ ...itemArgs(args), to, reason: reasonFlag(flags), who: { cli: true } });
      out(`${r.state.kind} ${r.state.id}: ${r.transition.from} → ${r.transition.to} (override ${r.override_id})`, r);
    },
  };
}

export const itemCommands: Command[] = [
  decision("retired"),
  decision("active"),
  {
    name: "item history",
    usage: "item history <store> <kind> <id>",
    summary: "an item's state and each transition: when, from, to, who, why",
    run: async ({ args, out }) => {
      const h = await itemHistoryIn(itemArgs(args));
      out([`${h.state.kind} ${h.state.id}: ${h.state.status}`, ...h.history.map(line)].join("\n"), h);
    },
  },
  {
    name: "item contradictions",
    usage: "item contradictions <store> [--limit N]",
    summary: "a store's unresolved contradictions: facts of one subject and property stating different values for the same time",
    run: async ({ args, flags, out }) => {
      const [store] = args;
      if (!store) throw new UsageError("give <store>");
      const q = contradictionsQuerySchema.safeParse({ limit: flagString(flags, "limit") });
      if (!q.success) throw new UsageError(q.error.issues[0].message);
      const r = await listContradictionsIn({ store, limit: q.data.limit });
      out(r.contradictions.map((c) => `${c.kind} ${c.id} ⟷ ${c.other_id}\t${c.reason}`).join("\n") || "no contradictions", r);
    },
  },
];
