import { getUserById, type PublicUser } from "./users";

/** What a session JWT carries about its person (see callbacks in options.ts). */
export type SessionClaims = { uid?: unknown; role?: unknown; sv?: unknown };

/**
 * The person a session JWT stands for, re-read from governance.db: null when
 * the account is gone or disabled, or when the token was issued before the
 * user's session_version last moved (password reset, role change, disable —
 * see users.ts), which is how those changes end existing sessions. A token
 * without `sv` predates session versions and is refused too. The one check
 * behind the request-level gate (proxy.ts), every page loader and every
 * server action.
 */
export function resolveSessionUser(claims: SessionClaims | null | undefined): PublicUser | null {
  const id = claims?.uid;
  if (typeof id !== "number") return null;
  const user = getUserById({ id });
  if (!user || user.disabledAt) return null;
  return claims?.sv === user.sessionVersion ? user : null;
}
