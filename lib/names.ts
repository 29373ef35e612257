/**
 * What names may be, with no imports, so a client component can check one
 * too (lib/common.ts re-exports it for the server side).
 */

/** What a store name may be: 1-63 chars of a-z, 0-9, _ and -, starting with a letter or digit. */
export const STORE_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
