/**
 * The address a person reached this server at, for examples they will copy
 * (the MCP snippet, curl lines): the request's own Host, or, behind trusted
 * reverse proxies (DUALMIND_TRUST_PROXY), the host and scheme those proxies
 * report. Forwarded headers from a direct client are ignored: Next.js passes
 * through whatever a client sends there. A missing or malformed value falls
 * back to the configured public URL (NEXTAUTH_URL, else http://HOST:PORT).
 */

/** A host name or IPv4 address, or a bracketed IPv6 address, with an optional port; nothing else is echoed back. */
const HOST_RE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

type HeaderGetter = { get(name: string): string | null };

/** The first entry of a comma-separated header, trimmed, or null. */
function firstEntry(value: string | null): string | null {
  const first = value?.split(",")[0]?.trim();
  return first ? first : null;
}

function validHost(value: string | null): string | null {
  if (!value || value.length > 260 || !HOST_RE.test(value)) return null;
  const port = value.match(/:(\d{1,5})$/)?.[1];
  return port !== undefined && (Number(port) < 1 || Number(port) > 65535) ? null : value.toLowerCase();
}

export function requestBaseUrl({ headers, trustProxyHops, configuredUrl }: { headers: HeaderGetter; trustProxyHops: number; configuredUrl: string }): string {
  const fallback = new URL(configuredUrl);
  const trusted = trustProxyHops > 0;
  const host = (trusted ? validHost(firstEntry(headers.get("x-forwarded-host"))) : null) ?? validHost(headers.get("host"));
  if (!host) return fallback.origin;
  const forwardedProto = trusted ? firstEntry(headers.get("x-forwarded-proto"))?.toLowerCase() : undefined;
  // Without a trusted proxy, the scheme is the configured one: `next start` itself serves plain HTTP.
  const proto = forwardedProto === "http" || forwardedProto === "https" ? forwardedProto : fallback.protocol.replace(":", "");
  return `${proto}://${host}`;
}
