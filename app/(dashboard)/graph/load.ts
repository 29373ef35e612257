import "server-only";
import { notFound } from "next/navigation";
import { getStoreDb, type StoreHandle } from "@/lib/db/connection";
import { storeExists, storeNameSchema } from "@/lib/db/store-names";

/** The store a graph page is about, or the 404 page (never creates a store). */
export function graphStoreOr404(raw: string): { store: string; handle: StoreHandle } {
  // Store names never need escaping, so the raw segment is validated as is (a malformed %-escape is simply not a store).
  const parsed = storeNameSchema.safeParse(raw);
  if (!parsed.success || !storeExists(parsed.data)) notFound();
  return { store: parsed.data, handle: getStoreDb(parsed.data) };
}
