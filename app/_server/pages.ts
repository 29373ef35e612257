import "server-only";
import { clientIdSchema } from "@/lib/common";
import { CORE_STORE, listStoreNames } from "@/lib/db/store-names";
import { isAppError } from "@/lib/errors";

/** Form GETs send empty fields as ""; a filter left blank means "no filter". */
export function filledParams(params: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    const value = Array.isArray(v) ? v[0] : v;
    if (value !== undefined && value.trim() !== "") out[k] = value.trim();
  }
  return out;
}

/** An unknown id becomes null (the page then answers 404); any other error still throws. */
export function findOrNull<T>(load: () => T): T | null {
  try {
    return load();
  } catch (e) {
    if (isAppError(e) && e.code === "not_found") return null;
    throw e;
  }
}

/** A client id from the URL, checked, then loaded; a malformed or unknown id is null (the page answers 404). */
export function findByClientId<T>(id: string, load: (id: string) => T): T | null {
  const parsed = clientIdSchema.safeParse(id);
  return parsed.success ? findOrNull(() => load(parsed.data)) : null;
}

/**
 * The store a page shows: the one asked for when it exists, else the first
 * store that is not core (core holds shared identity, rarely what a page is
 * about), else core, which always exists.
 */
export function pickStore(requested?: string): { store: string; stores: string[] } {
  const stores = listStoreNames();
  const store = requested && stores.includes(requested) ? requested : (stores.find((s) => s !== CORE_STORE) ?? CORE_STORE);
  return { store, stores };
}
