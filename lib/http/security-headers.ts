/**
 * Response headers every answer carries (pages, API, refusals, redirects):
 * no framing, no MIME sniffing, no referrer to other sites, and a Content
 * Security Policy. Pages get a per-request script nonce (proxy.ts makes one;
 * Next reads it back from the request's CSP header and stamps its own
 * scripts), so no inline script runs unless the server wrote it.
 */

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  // Stricter than strict-origin-when-cross-origin: other sites get no referrer at all. Same-origin requests keep theirs.
  "Referrer-Policy": "same-origin",
};

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
  const script = ["'self'", ...(nonce ? [`'nonce-${nonce}'`, "'strict-dynamic'"] : []), ...(dev ? ["'unsafe-eval'"] : [])];
  return [
    "default-src 'self'",
    `script-src ${script.join(" ")}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** Set the security headers (and this policy) on a response's headers. */
export function applySecurityHeaders(headers: Headers, policy: string): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) headers.set(name, value);
  headers.set("Content-Security-Policy", policy);
}
