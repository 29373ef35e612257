/**
 * Small collection helpers with no imports at all, so client components may
 * use them too (lib/common.ts brings zod and node:crypto into a browser
 * bundle: zod's eval probe is a Content-Security-Policy violation there).
 */

/** Append `values` to the list kept under `key` (made on first use), in place: rebuilding the list per item is quadratic. */
export function pushTo<K, V>(map: Map<K, V[]>, key: K, ...values: V[]): void {
  const list = map.get(key);
  if (list) list.push(...values);
  else map.set(key, values);
}
