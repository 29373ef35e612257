import { assertStoresWritable } from "../db/store-lifecycle";
import { actorOf } from "../auth/actor";
import type { AgentPrincipal } from "../auth/tokens";
import type { PublicUser } from "../auth/users";
import { currentEngine } from "../db/engine";
import { isAppError } from "../errors";
import type { LedgerCaller } from "../governance/ledger";
import { decideItem, itemHistory, itemNotFound, type ItemDecision, type ItemKind, type ItemState, type ItemTransition } from "../index/item-state";
import { storeEngineOf } from "../stores/backend";
import { assertAgentMayChange } from "../index/proposals";
import type { LedgerWho } from "../index/governed-ledger";
import { callerOf } from "./respond";

/**
 * Invalidate, restore and history of one item by id, for every surface (REST, MCP, CLI, dashboard): the store
 * opened by name (an unknown store answers the item's own 404), the decision in the store's write with its audit
 * entry and its ledger override ("who retired this and why", from System 2).
 */
export type Who = { principal: AgentPrincipal } | { user: Pick<PublicUser, "username"> } | { cli: true };

export function actorFor(who: Who) {
  if ("principal" in who) return actorOf(who.principal);
  if ("user" in who) return actorOf(who.user);
  return actorOf("cli");
}

export function callerFor(who: Who): LedgerCaller | undefined {
  return "principal" in who ? callerOf(who.principal) : undefined;
}

/** Who a decision's ledger row names: the agent's token label and its share of the ledger, or the person or CLI. */
export function ledgerWho(who: Who): LedgerWho {
  return { tokenLabel: "principal" in who ? who.principal.label : actorFor(who), caller: callerFor(who) };
}

async function openItemStore({ store, kind, id }: { store: string; kind: ItemKind; id: string }) {
  try {
    return await storeEngineOf(currentEngine()).open(store);
  } catch (e) {
    if (isAppError(e) && e.code === "not_found") throw itemNotFound({ store, kind, id });
    throw e;
  }
}

export async function decideItemIn({ store, kind, id, to, reason, who }: { store: string; kind: ItemKind; id: string; to: "retired" | "active"; reason: string; who: Who }): Promise<ItemDecision & { override_id: string }> {
  // Every surface (REST, MCP, the dashboard, the CLI) answers an archived store's decision the same: 409 store_archived.
  await assertStoresWritable([store]);
  const handle = await openItemStore({ store, kind, id });
  const actor = actorFor(who);
  if (kind !== "trace") await assertAgentMayChange({ handle, kind, id, proposalsDecideThemselves: true });
  return decideItem({ handle, store, kind, id, to, reason, actor, ledger: ledgerWho(who) });
}

export async function itemHistoryIn({ store, kind, id }: { store: string; kind: ItemKind; id: string }): Promise<{ state: ItemState; history: ItemTransition[] }> {
  return itemHistory({ handle: await openItemStore({ store, kind, id }), store, kind, id });
}
