import { AppError } from "../errors";
import { CREDENTIAL_RULES, type CredentialRule, looksLikeSecret, PLACEHOLDERS, SECRET_RUN } from "../credentials";

export { PLACEHOLDERS };

/**
 * Remove secrets and personal data from agent-supplied text before it is
 * stored or embedded. The original is never persisted: callers store only
 * what this returns. Patterns run most-specific first so a token inside a
 * URL or a `key=value` pair gets the most telling placeholder.
 * The credential patterns are lib/credentials.ts's (the poisoning scanner
 * flags the same ones); the personal-data patterns are here. Every pattern
 * runs in linear time on hostile text (see lib/credentials.ts).
 */

const RULES: CredentialRule[] = [
  ...CREDENTIAL_RULES,
  // From the first word character of the run (leading dots and dashes stay, as `\b` left them).
  { name: "email", pattern: /(?<![\w.%+-])([.%+-]*)\w[\w.%+-]*@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b/g, replace: (_m, lead) => `${lead}${PLACEHOLDERS.email}` },
  { name: "ipv4", pattern: /\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b/g, replace: PLACEHOLDERS.ip },
  // Groups after `::` are colon-separated: an optional colon between groups split a hex run thousands of ways.
  { name: "ipv6", pattern: /\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b|\b(?:[0-9a-f]{1,4}:){1,6}:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,5}\b/gi, replace: PLACEHOLDERS.ip },
  { name: "home_unix", pattern: /(\/(?:home|Users)\/)(?!\[USER\])[^/\s]+/g, replace: (_m, prefix) => `${prefix}${PLACEHOLDERS.user}` },
  { name: "home_windows", pattern: /([A-Za-z]:\\+Users\\+)(?!\[USER\])[^\\\s]+/gi, replace: (_m, prefix) => `${prefix}${PLACEHOLDERS.user}` },
  { name: "tilde_user", pattern: /(^|\s)~(?!\/)[a-z_][a-z0-9_-]*/g, replace: (_m, lead) => `${lead}~${PLACEHOLDERS.user}` },
];

/**
 * The most agent text one request may have sanitized, all fields together.
 * The schemas bound each field; only a learning's args (any number of keys)
 * can add up to the body limit. A larger request is refused (413) rather than
 * truncated: cutting before sanitizing could leave half a secret that no
 * pattern recognizes, and a learning with args silently dropped would be
 * stored, deduped and recalled as something it is not.
 */
export const MAX_SANITIZE_CHARS = 64 * 1024;

function textLength(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + textLength(v), 0);
  if (value && typeof value === "object") return Object.values(value).reduce((n: number, v) => n + textLength(v), 0);
  return 0;
}

/** Refuse (413) a request whose strings, all together, are more than MAX_SANITIZE_CHARS to sanitize. */
export function assertSanitizeBudget(value: unknown, what: string): void {
  const chars = textLength(value);
  if (chars > MAX_SANITIZE_CHARS) {
    throw new AppError("payload_too_large", `${what} has ${chars} characters of text; at most ${MAX_SANITIZE_CHARS} are accepted (shorten the longest fields or send fewer args)`, [
      { message: `text fields total ${chars} characters`, limit: MAX_SANITIZE_CHARS },
    ]);
  }
}

/** Text with secrets and PII replaced by placeholders. Idempotent. Linear in the text's length. */
export function sanitizeText(text: string): string {
  let out = text;
  for (const rule of RULES) out = out.replace(rule.pattern, rule.replace as (...m: string[]) => string);
  return out.replace(SECRET_RUN, (m) => (looksLikeSecret(m) ? PLACEHOLDERS.secret : m));
}

/** Sanitize every string in a JSON-like value (keys are kept; they name what the value is). */
export function sanitizeJson(value: unknown): unknown {
  if (typeof value === "string") return sanitizeText(value);
  if (Array.isArray(value)) return value.map(sanitizeJson);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, sanitizeJson(v)]));
  return value;
}
