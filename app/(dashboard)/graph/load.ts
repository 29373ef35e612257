import "server-only";
import { notFound } from "next/navigation";
import type { StoreHandle } from "@/lib/db/connection";
import { storeNameSchema } from "@/lib/db/store-names";
import { findOrNull } from "@/app/_server/pages";
import { openStore } from "@/lib/stores/stores";

/** The store a graph page is about, or the 404 page (never creates a store). */
export function graphStoreOr404(raw: string): { store: string; handle: StoreHandle } {
  // Store names never need escaping, so the raw segment is validated as is (a malformed %-escape is simply not a store).
  const parsed = storeNameSchema.safeParse(raw);
  const handle = parsed.success ? findOrNull(() => openStore({ store: parsed.data })) : null;
  if (!handle) notFound();
  return { store: handle.store, handle };
}
