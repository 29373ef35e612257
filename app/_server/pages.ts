import "server-only";
import { isKeyRef, ownedRefSchema, type OwnedChoice } from "@/lib/governance/owned-ids";
import { CORE_STORE } from "@/lib/db/store-names";
import { isAppError } from "@/lib/errors";
import { LAST_STORE_COOKIE } from "@/lib/http/last-store";
import { stores } from "@/lib/stores/backend";
import { cookies } from "next/headers";

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

/** findOrNull for an async load (the governance backend answers with promises). */
export async function findOrNullAsync<T>(load: () => Promise<T>): Promise<T | null> {
  try {
    return await load();
  } catch (e) {
    if (isAppError(e) && e.code === "not_found") return null;
    throw e;
  }
}

/** What a task's or review's page shows for the key or id in its URL: the row, a choice between the rows of several owners, or nothing (404). */
export type OwnedLookup<T> = { found: T } | { choices: OwnedChoice[] } | null;

/**
 * A task's or review's key (or id) from the URL, checked, then loaded; a
 * malformed or unknown one is null (the page answers 404). A bare id that
 * several owners chose is a choice between their rows (each linked by its key), not an error.
 */
export async function findByClientId<T>({ id, load, choices }: { id: string; load: (id: string) => Promise<T>; choices: (id: string) => Promise<OwnedChoice[]> }): Promise<OwnedLookup<T>> {
  const parsed = ownedRefSchema.safeParse(id);
  if (!parsed.success) return null;
  try {
    const found = await findOrNullAsync(() => load(parsed.data));
    return found === null ? null : { found };
  } catch (e) {
    if (!isAppError(e) || e.code !== "conflict" || isKeyRef(parsed.data)) throw e;
    const named = await choices(parsed.data);
    if (named.length < 2) throw e;
    return { choices: named };
  }
}

/**
 * The store a page shows: the one asked for when it exists, else the one this
 * person used last (the `dualmind-store` cookie, written when a page that
 * names a store is opened: lib/http/last-store.ts), else the first store that holds something — never an empty
 * store when a non-empty one exists — preferring stores other than core (core
 * holds shared identity, rarely what a page is about); core always exists.
 */
export async function pickStore(requested?: string, remembered?: string): Promise<{ store: string; stores: string[] }> {
  // Content by exists() probes, asked only until one answers yes (and not at all when the wanted store exists).
  const names = await stores().listStoreNames();
  const has = new Map<string, boolean>();
  if (![requested, remembered].some((w) => w && names.includes(w))) {
    for (const name of [...names.filter((n) => n !== CORE_STORE), ...names.filter((n) => n === CORE_STORE)]) {
      has.set(name, await stores().storeHasContent({ store: name }));
      if (has.get(name)) break;
    }
  }
  return choose(names, (name) => has.get(name) === true, requested, remembered);
}

function choose(names: string[], hasContent: (store: string) => boolean, requested?: string, remembered?: string): { store: string; stores: string[] } {
  for (const wanted of [requested, remembered]) {
    if (wanted && names.includes(wanted)) return { store: wanted, stores: names };
  }
  const others = names.filter((s) => s !== CORE_STORE);
  const ordered = [...others, ...names.filter((s) => s === CORE_STORE)];
  const withContent = ordered.find(hasContent);
  return { store: withContent ?? others[0] ?? CORE_STORE, stores: names };
}

/** pickStore with the store this person used last, read from their cookie. */
export async function pickRememberedStore(requested?: string): Promise<{ store: string; stores: string[] }> {
  const remembered = (await cookies()).get(LAST_STORE_COOKIE)?.value;
  return pickStore(requested, remembered);
}

/**
 * "Now" for a server-rendered page: read once per request and passed down, so
 * every relative time on the page ("5 minutes ago") counts from the same moment.
 */
export function requestTime(): number {
  return Date.now();
}
