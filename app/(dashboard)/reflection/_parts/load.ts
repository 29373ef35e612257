import "server-only";
import { notFound } from "next/navigation";
import { findOrNull } from "@/app/_server/pages";
import type { StoreHandle } from "@/lib/db/connection";
import { storeNameSchema } from "@/lib/db/store-names";
import { openStore } from "@/lib/stores/stores";

/** The store a reflection detail URL names, opened; a malformed or unknown name is the dashboard's 404. */
export function reflectionStoreOr404(raw: string): StoreHandle {
  // No decoding: a valid store name has nothing to decode, and a stray "%" must be a 404, not a URIError.
  const name = storeNameSchema.safeParse(raw);
  const handle = name.success ? findOrNull(() => openStore({ store: name.data })) : null;
  if (!handle) notFound();
  return handle;
}

/** A positive integer id from the URL, or the dashboard's 404. */
export function intIdOr404(raw: string): number {
  const id = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id)) notFound();
  return id;
}
