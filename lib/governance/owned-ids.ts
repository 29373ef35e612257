import { z } from "zod";
import { AppError } from "../errors";

/*
 * Task and review ids are chosen by their owner (the requester, the paused
 * agent) and namespaced per owner: two agents may each have a task "t1", and
 * neither can see, claim or detect the other's. A row keeps the id its owner
 * chose (client_id, unique per owner) and an internal key the rows below it
 * reference: `owner~id`, or the id itself for rows written before ids were
 * namespaced (so links to them keep working). Neither part of a key can hold
 * `~`, so a key names one row.
 */
export const KEY_SEPARATOR = "~";

/** The internal key of an id its owner chose. */
export function ownedKey({ owner, clientId }: { owner: string; clientId: string }): string {
  return `${owner}${KEY_SEPARATOR}${clientId}`;
}

/*
 * Rows under a parent follow the same rule one level down: a run or a
 * validation id is unique per task, a message id per session, an override id
 * per actor. The row keeps the id as chosen (client_id) and the key
 * `parent~id` (parent: the task's or session's key, or the actor); rows from
 * before keep their id as key, so provenance, audit targets and message
 * signatures that name them are unchanged. Its id never holds `~`, so the
 * last `~` of a key ends its parent.
 */

/** The id a reference to a row under `parent` was chosen as: its key without the parent, or the key itself (a row from before ids were namespaced). */
export function childClientId({ key, parent }: { key: string; parent: string }): string {
  return key.startsWith(`${parent}${KEY_SEPARATOR}`) ? key.slice(parent.length + 1) : key;
}

/** A reference with `~` is a key; without, an id as its owner chose it (for rows from before ids were namespaced, also their key). */
export function isKeyRef(ref: string): boolean {
  return ref.includes(KEY_SEPARATOR);
}

/** The owner and id a key names (`owner~id`), or null for a plain id. */
export function splitKey(ref: string): { owner: string; clientId: string } | null {
  const at = ref.indexOf(KEY_SEPARATOR);
  return at < 0 ? null : { owner: ref.slice(0, at), clientId: ref.slice(at + 1) };
}

/**
 * `involved`: the caller is named on the row (a reviewer, an assignee), not
 * merely allowed to see it (an open review anyone may claim).
 */
export type OwnedRow = { key: string; clientId: string; owner: string; involved?: boolean };

/**
 * The one row a reference names for a caller, among `visible` (the rows whose
 * key or id is `ref` that the caller may see; the caller's own come first
 * where it has one). The caller's own id wins; then the row a key names —
 * its key column, or `owner~id` spelled out for a row from before ids were
 * namespaced, whose key is the bare id; then the one visible row with that
 * id, the caller's involvement first (an open review someone else made with
 * the same id does not shadow the one the caller reviews); else undefined,
 * which callers answer exactly as an unknown id. Several rows of other owners
 * with that id at the same rank are ambiguous (409, naming their keys: the
 * caller may see every one of them).
 */
export function pickOwned<R>({ visible, ref, ownerId, view, kind }: { visible: R[]; ref: string; ownerId: string | undefined; view: (r: R) => OwnedRow; kind: string }): R | undefined {
  const own = ownerId === undefined ? undefined : visible.find((r) => view(r).owner === ownerId && view(r).clientId === ref);
  if (own) return own;
  const split = splitKey(ref);
  const keyed = visible.find((r) => view(r).key === ref || (split !== null && view(r).owner === split.owner && view(r).clientId === split.clientId));
  if (keyed) return keyed;
  if (split) return undefined;
  const named = visible.filter((r) => view(r).clientId === ref);
  const involved = named.filter((r) => view(r).involved);
  const candidates = involved.length > 0 ? involved : named;
  const keys = [...new Set(candidates.map((r) => view(r).key))];
  if (keys.length > 1) {
    throw new AppError("conflict", `${kind} id ${ref} names several ${kind}s of other agents you may see; address one by its key`, keys.map((key) => ({ path: "key", message: key })));
  }
  return candidates[0];
}

/** One of the rows an id names where several owners chose it: what the operator picks from. */
export type OwnedChoice = { key: string; owner: string; title: string; createdAt: number };

/** At most this many rows are offered for one id (ids are an owner's choice; a long list is not a choice). */
export const OWNED_CHOICES_MAX = 100;

/** How a request names a task or a review: the id (as its owner chose it) or its key (`owner~id`). */
export const ownedRefSchema = z
  .string()
  .regex(/^(?:[A-Za-z0-9._:@-]{1,100}~)?[A-Za-z0-9_-]{1,64}$/, "an id (1-64 letters, digits, _ or -, a uuid fits) or a key (owner~id)");
