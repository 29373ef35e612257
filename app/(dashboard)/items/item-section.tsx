import { ItemGovernance } from "@/components/item-governance";
import { itemHistoryIn } from "@/lib/api/items";
import { roleAtLeast, type PublicUser } from "@/lib/auth/users";
import type { ItemKind } from "@/lib/index/item-state";
import { itemDecisionAction } from "./actions";

/** An item page's governed-memory section: its state and history; Invalidate / Restore for editors and admins. */
export async function ItemSection({ store, kind, id, user }: { store: string; kind: ItemKind; id: string; user: PublicUser }) {
  const { state, history } = await itemHistoryIn({ store, kind, id });
  return <ItemGovernance store={store} kind={kind} id={id} status={state.status} history={history} canDecide={roleAtLeast({ role: user.role, min: "editor" })} action={itemDecisionAction} />;
}
