import { getUserById, type PublicUser } from "./users";

/** What a session JWT carries about its person (see callbacks in options.ts). */
export type SessionClaims = { uid?: unknown; role?: unknown; sv?: unknown };

/**
 * The person a session JWT stands for, re-read from governance.db: null when
 * the account is gone or disabled. The one check behind the request-level
 * gate (proxy.ts), every page loader and every server action.
 */
export function resolveSessionUser(claims: SessionClaims | null | undefined): PublicUser | null {
  const id = claims?.uid;
  if (typeof id !== "number") return null;
  const user = getUserById({ id });
  return user && !user.disabledAt ? user : null;
}
