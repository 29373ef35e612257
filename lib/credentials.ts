/**
 * What a credential looks like: the one list of patterns that the recall
 * sanitizer (lib/recall/sanitize.ts) replaces before storing and the poisoning
 * scanner (lib/poison.ts) flags on what is shown. Base layer: imports nothing.
 *
 * Every pattern runs in linear time on hostile text.
 * A backtracking engine tries a pattern at every start position; a pattern
 * that can start anywhere inside a long run (`\b` holds before every letter
 * of `a-a-a-…`) and then scans to the run's end is quadratic. So a pattern
 * whose first part spans a run only starts where that run starts (a
 * lookbehind for "no run character before me"), and whatever the old `\b`
 * start skipped at the front of the run is captured and put back.
 */

export const PLACEHOLDERS = {
  apiKey: "[REDACTED_API_KEY]",
  token: "[REDACTED_TOKEN]",
  password: "[REDACTED_PASSWORD]",
  secret: "[REDACTED_SECRET]",
  email: "[EMAIL]",
  ip: "[IP]",
  user: "[USER]",
} as const;

export type CredentialRule = { name: string; pattern: RegExp; replace: string | ((...m: string[]) => string) };

// Known provider key shapes: the prefix alone is enough to be sure.
const PROVIDER_KEYS = [
  /\bsk-ant-[A-Za-z0-9_-]{16,}/g, // Anthropic
  /\bsk-(?:proj-|svcacct-|live-|test-)?[A-Za-z0-9_-]{20,}/g, // OpenAI and look-alikes
  /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}/g, // GitHub
  /\bgithub_pat_[A-Za-z0-9_]{30,}/g,
  /\bglpat-[A-Za-z0-9_-]{20,}/g, // GitLab
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g, // Slack
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, // AWS access key id
  /\bAIza[0-9A-Za-z_-]{35}/g, // Google
  /\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g, // Stripe
  /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/g, // SendGrid
  /\bnpm_[A-Za-z0-9]{30,}/g,
  /\bhf_[A-Za-z0-9]{30,}/g, // Hugging Face
  /\bdm_[A-Za-z0-9_-]{20,}/g, // dualmind's own API tokens
];

/**
 * Credentials, most specific first. A match is a credential when its replacement differs from it
 * (`assignment` keeps a value that is not credential-like, so "token: expired" is no credential).
 */
export const CREDENTIAL_RULES: readonly CredentialRule[] = [
  { name: "private_key", pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, replace: PLACEHOLDERS.secret },
  // scheme://user:password@host → keep the user name shape, drop the password.
  {
    name: "url_password",
    pattern: /(?<![a-z0-9+.-])([0-9+.-]*[a-z][a-z0-9+.-]*:\/\/)([^\s:/@]+):([^\s@/]+)@/gi,
    replace: (_m, scheme) => `${scheme}${PLACEHOLDERS.user}:${PLACEHOLDERS.password}@`,
  },
  { name: "bearer", pattern: /\b(Bearer|Token|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g, replace: (_m, word) => `${word} ${PLACEHOLDERS.token}` },
  // The first `eyJ` of a run that starts it or follows a `-` (where `\b` holds); a later one in the
  // same run shares its segments, so it matches only if the first does. The lead before it stays.
  {
    name: "jwt",
    pattern: /(?<![A-Za-z0-9_-])(?:(?!eyJ)((?:[A-Za-z0-9_]|-(?!eyJ))*-))?eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
    replace: (_m, lead) => `${lead ?? ""}${PLACEHOLDERS.token}`,
  },
  ...PROVIDER_KEYS.map((pattern) => ({ name: "provider_key", pattern, replace: PLACEHOLDERS.apiKey })),
  // password=..., api_key: "..." (the name stays: it says what failed). A password
  // value always goes; other values only when credential-like, so "token: expired" survives.
  {
    name: "assignment",
    // The name is an identifier run ending in a credential word at a `_`/`-` boundary; the value is
    // taken whole (a shorter value would end before a value character, never before the quote).
    pattern: /(?<![A-Za-z0-9_-])((?:[A-Za-z0-9_-]*[_-])?(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret))(\s*[:=]\s*)(["']?)(?!\[)(?=([^\s"',;]{4,}))\4\3/gi,
    replace: (m, key, sep, quote, value) => {
      if (/pass|pwd/i.test(key)) return `${key}${sep}${quote}${PLACEHOLDERS.password}${quote}`;
      return value.length >= 8 && /\d/.test(value) ? `${key}${sep}${quote}${PLACEHOLDERS.secret}${quote}` : m;
    },
  },
];

function shannonBitsPerChar(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/**
 * A long run of key-like characters that mixes letters and digits and is
 * close to random is treated as a secret. Words, paths and identifiers have
 * low entropy or no digits, so they survive.
 */
export function looksLikeSecret(s: string): boolean {
  if (s.length < 24 || s.startsWith("[")) return false;
  const digits = (s.match(/\d/g) ?? []).length;
  const letters = (s.match(/[A-Za-z]/g) ?? []).length;
  if (digits < 2 || letters < 4) return false;
  return shannonBitsPerChar(s) >= 3.5;
}

/** Runs of key-like characters long enough to be tested with looksLikeSecret. */
export const SECRET_RUN = /[A-Za-z0-9+_=-]{24,}/g;
