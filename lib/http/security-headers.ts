/** Response headers every answer carries (SECURITY.md): pages get a per-request script nonce (proxy.ts), so no inline script runs unless the server wrote it. */

import values from "./security-headers.json";

/**
 * The header values live in security-headers.json because next.config.mjs
 * reads them too: it puts them on the agent API's plain paths, which the
 * proxy does not run for (see PLAIN_API_PATHS).
 */
// No framing, no MIME sniffing; stricter than strict-origin-when-cross-origin: other sites get no referrer at all.
export const SECURITY_HEADERS: Readonly<Record<string, string>> = values.headers;

/** A fresh, unguessable nonce for one response (128 bits, base64). */
export function createNonce(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
}

/**
 * The policy. With a nonce (pages): scripts only from that nonce and what
 * those scripts load ('strict-dynamic'; 'self' is the fallback for browsers
 * without it). Without one (API answers, refusals, static files): scripts
 * from this origin only. Inline style attributes stay allowed: the charts
 * (recharts) draw with them, and a style cannot run script.
 * `dev` adds 'unsafe-eval', which React's dev build needs for its error overlay.
 */
export function contentSecurityPolicy({ nonce, dev = false }: { nonce?: string; dev?: boolean } = {}): string {
  if (!nonce && !dev) return PLAIN_POLICY;
  const script = [values.policy["script-src"], ...(nonce ? [`'nonce-${nonce}'`, "'strict-dynamic'"] : []), ...(dev ? ["'unsafe-eval'"] : [])];
  return policyText({ ...values.policy, ...(nonce ? {} : values.policyWithoutPage), "script-src": script.join(" ") });
}

function policyText(policy: Record<string, string>): string {
  return Object.entries(policy)
    .map(([directive, value]) => `${directive} ${value}`)
    .join("; ");
}

/**
 * The policy without a nonce: the same for every answer, so made once. Those
 * answers render no page (API, refusals, build files), so they allow no inline
 * images either (no `data:`/`blob:`): no value of these headers holds a colon,
 * which Next would otherwise compile as a path pattern on every request it
 * sets them on (next.config.mjs, for the plain API paths).
 */
const PLAIN_POLICY = policyText({ ...values.policy, ...values.policyWithoutPage });

/** Set the security headers (and this policy) on a response's headers. */
export function applySecurityHeaders({ headers, policy }: { headers: Headers; policy: string }): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) headers.set(name, value);
  headers.set("Content-Security-Policy", policy);
}

/**
 * The agent API's plain paths: /api/v1 and /api/mcp with nothing but
 * letters, digits and `_ . ~ -` in each segment, none starting with a dot
 * (so no escape and no dot segment: the router serves exactly the path
 * written, which is public). These answers need no session and render no
 * page, so Next does not run the proxy for them (proxy.ts `config.matcher`
 * is every other path) and next.config.mjs gives them the headers above
 * instead. A Next path pattern, matched against the raw path.
 */
export const PLAIN_API_PATHS: string = values.plainApiPaths;
