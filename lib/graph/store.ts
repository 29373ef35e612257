import { z } from "zod";
import type { AgentPrincipal } from "../auth/tokens";
import { getStoreDb, type StoreHandle } from "../db/connection";
import { requireStore } from "../stores/stores";
import { storeNameSchema } from "../db/store-names";
import { uuidSchema } from "../common";

/** 404 for an unknown store, before opening it (opening would create it). */
export function openGraphStore(store: string): StoreHandle {
  requireStore(store);
  return getStoreDb(store);
}

export function agentActor(principal: AgentPrincipal | null): string {
  return `agent:${principal?.agentId ?? "unknown"}`;
}

/** Route params of /stores/{store}/<thing>/{id}. */
export const storeItemParams = z.object({ store: storeNameSchema, id: uuidSchema }).strict();
