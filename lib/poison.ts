/**
 * The poisoning scanner: text an agent wrote into memory that may be aimed at
 * whoever reads it later. Three flags, a closed set:
 *
 * - `instructions`: text addressed to a future reader or model that tries to
 *   change its behaviour ("ignore previous instructions", "you are now …",
 *   "do not tell the user", chat-template and jailbreak markers, hidden
 *   zero-width or bidi control characters, an HTML comment talking to an AI);
 * - `credentials`: what lib/credentials.ts calls a credential (the recall
 *   sanitizer's own list, not a copy);
 * - `links`: commands or links to run (`curl … | sh`, `bash <(…)`,
 *   `powershell -enc`, `javascript:` and script `data:` URLs, a link to an
 *   executable with an imperative to run it, a link with an order to follow it).
 *
 * A flag is a warning, computed from the stored text when an item is shown
 * (nothing is stored). Bounded: each field is scanned up to
 * POISON_MAX_FIELD_CHARS, an item yields at most one flag per field and rule
 * and at most POISON_MAX_FLAGS in all, and every pattern runs in linear time
 * (no unbounded repetition after a start that can repeat; HTML comments are
 * paired by index, not by a regex).
 * Base layer: imports only lib/credentials.ts and zod.
 */
import { z } from "zod";
import { CREDENTIAL_RULES, looksLikeSecret, PLACEHOLDERS, SECRET_RUN } from "./credentials";

export const POISON_FLAGS = ["instructions", "credentials", "links"] as const;
export type PoisonFlagName = (typeof POISON_FLAGS)[number];

/** The most characters of one field that are scanned; the rest is not looked at. */
export const POISON_MAX_FIELD_CHARS = 16 * 1024;
/** The most flags one item carries (one per field and rule, first match). */
export const POISON_MAX_FLAGS = 12;
/** The most characters of an excerpt (the match and a little around it). */
const EXCERPT_CHARS = 96;
/** The most text walked in a JSON value (attributes, properties, args) before its fields are scanned. */
const MAX_JSON_FIELDS = 64;

export const poisonFlagSchema = z.strictObject({
  /** instructions, credentials or links. */
  flag: z.enum(POISON_FLAGS),
  /** The rule that matched (e.g. ignore_previous, provider_key, pipe_to_shell). */
  rule: z.string(),
  /** Why the rule flags this, in words. */
  reason: z.string(),
  /** The field it was found in (a JSON value's key after a dot: attributes.note). */
  field: z.string(),
  /** [start, end) of the match in the field's text (UTF-16 code units). */
  start: z.number().int().min(0),
  end: z.number().int().min(0),
  /** The match with a little context, credentials masked, hidden characters spelled <U+XXXX>. */
  excerpt: z.string(),
});
export type PoisonFlag = z.infer<typeof poisonFlagSchema>;
export const poisonFlagsSchema = z.array(poisonFlagSchema);

/**
 * A rule's pattern, and what its text must hold for the pattern to match at all (tested on the lowercased
 * text with `includes`, which is far cheaper than a pattern's alternatives tried at every position): a
 * necessary condition only, so skipping on it never changes an answer.
 */
type Rule = { name: string; flag: PoisonFlagName; reason: string; pattern: RegExp; needs?: (lower: string) => boolean };

/**
 * Every match of a global pattern, from its own lastIndex (reset first): unlike matchAll, no copy of the
 * pattern per call. An empty match moves on one character, so the loop always ends.
 */
function* matchesOf(pattern: RegExp, text: string): Generator<RegExpExecArray> {
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    if (m[0].length === 0) pattern.lastIndex++;
    yield m;
  }
}

/** Needs any of these substrings. */
const anyOf =
  (...words: string[]) =>
  (lower: string) =>
    words.some((w) => lower.includes(w));

const HIDDEN_CHARS = "\\u200B\\u2060-\\u2064\\u202A-\\u202E\\u2066-\\u2069\\u180E";
const HIDDEN = new RegExp(`[${HIDDEN_CHARS}]|(?<!^)\\uFEFF`, "gu");
// A zero-width joiner between pictographs is how emoji are composed; elsewhere it hides text.
const LONE_ZWJ = /(?<![\p{Extended_Pictographic}\p{Emoji_Modifier}\uFE0F])\u200D|\u200D(?![\p{Extended_Pictographic}\p{Emoji_Modifier}])/gu;
const TAG_CHARS = /[\u{E0000}-\u{E007F}]/gu;

/** Instructions to a future reader. Word lists are closed and bounded, so a start never scans far. */
const INSTRUCTION_RULES: Rule[] = [
  {
    name: "ignore_previous",
    needs: anyOf("ignor", "disregard", "forget", "overr", "bypass", "abandon", "drop", "stop", "quit", "cease"),
    flag: "instructions",
    reason: "tells the reader to ignore or forget what it was told before",
    pattern:
      /\b(?:ignore|disregard|forget|override|overrule|bypass|abandon|drop)\s+(?:(?:all|any|every|each|of|the|your|my|our|these|those|everything|anything|that|was|which|you|were|have|been|said|told|given)\s+){0,4}(?:previous|prior|preceding|earlier|above|foregoing|former|original|initial|system|existing)\s+(?:\w+\s+){0,2}(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guidance|constraints|messages?|context|commands?|orders|programming|restrictions|policies)\b|\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|these|those)\s+){0,2}(?:instructions?|prompts?|directions?|directives?|rules|guidelines|guidance|constraints|restrictions)\s+(?:above|before\s+this|so\s+far|you\s+(?:were|have\s+been)\s+given|given\s+(?:to\s+you|earlier|before))\b|\b(?:stop|quit|cease)\s+(?:following|obeying|applying)\s+(?:(?:all|any|the|your|these|those)\s+){0,2}(?:instructions?|prompts?|directives?|rules|guidelines|guidance|constraints|restrictions|policies|programming)\b/gi,
  },
  {
    name: "disregard_above",
    needs: anyOf("disregard", "ignor", "forget"),
    flag: "instructions",
    reason: "tells the reader to disregard what came before",
    pattern: /\b(?:disregard|ignore|forget)\s+(?:all\s+|everything\s+|anything\s+)?(?:of\s+)?(?:the\s+|that\s+)?(?:above|before\s+this|previous|prior)(?:\s+(?:text|content|conversation|discussion|lines?|messages?))?\s*(?:[.!;:]|$|\s+(?:and|then)\s)/gim,
  },
  {
    name: "role_reassignment",
    needs: (l) => (l.includes("you") && anyOf("now", "longer", "pretend", " as")(l)) || l.includes("from") || (l.includes(" as") && anyOf("act", "behave", "respond")(l)),
    flag: "instructions",
    reason: "tries to give the reader a new identity or mode",
    pattern:
      /\b(?:you\s+are\s+(?:now|no\s+longer)\s+(?:an?\s+|the\s+|my\s+|in\s+)?(?:\w+\s+){0,2}?(?:ai|assistant|model|bot|chatbot|agent|DAN|persona|character|mode|unrestricted|unfiltered|jailbroken|free|evil|uncensored|hacker|admin|administrator|developer|root)\b|(?:from\s+now\s+on|from\s+this\s+(?:point|moment)\s+(?:on|forward|onwards?)|from\s+here\s+on),?\s+(?:you\s+(?:are|will|must|shall|should|can|may)|act|respond|answer|behave|pretend|ignore|always|never)\b|(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|DAN)\b|pretend\s+(?:that\s+)?you\s+(?:are|have)\s+(?:no|an?\s+(?:unrestricted|unfiltered|uncensored))\b)/gi,
  },
  {
    name: "system_prompt",
    needs: anyOf("system", "instructions", "prompt"),
    flag: "instructions",
    reason: "asks to reveal, replace or override the reader's system prompt",
    pattern:
      /\b(?:reveal|print|show|output|repeat|leak|dump|disclose|display|ignore|override|overwrite|replace|change|forget|update)\s+(?:(?:me|us|your|the|its|this|my|entire|full|whole|original|hidden|initial|secret)\s+){0,3}(?:system\s+(?:prompt|message|instructions)|initial\s+instructions|hidden\s+instructions|pre-?prompt)\b|\b(?:new|updated|real|true|actual|secret|hidden)\s+system\s+(?:prompt|instructions)\s*[:=-]/gi,
  },
  {
    name: "conceal_from_user",
    needs: (l) => anyOf("user", "human", "operator", "owner", "developer")(l) && anyOf("not", "n't", "dont", "never", "without", "keep")(l),
    flag: "instructions",
    reason: "asks the reader to hide something from its user",
    pattern:
      /\b(?:do\s+not|don't|dont|never|must\s+not)\s+(?:tell|inform|notify|alert|warn|mention\s+(?:this|it|that)\s+to|reveal\s+(?:this|it|that)\s+to|let)\s+(?:the|your|any)\s+(?:user|human|operator|owner|developer)s?\b|\b(?:do\s+not|don't|dont|never|must\s+not)\s+(?:mention|reveal|disclose|show|report|explain)\b[^.\n]{0,60}?\bto\s+(?:the|your|any)\s+(?:user|human|operator|owner)s?\b|\bwithout\s+(?:telling|informing|notifying|alerting)\s+(?:the|your)\s+(?:user|human|operator)s?\b|\bkeep\s+(?:this|it|that)\s+(?:secret|hidden|confidential)\s+from\s+(?:the|your)\s+(?:user|human|operator)s?\b/gi,
  },
  {
    name: "new_instructions",
    needs: anyOf("your", "instruction", "ai", "llm", "assistant", "model", "chatbot", "agent"),
    flag: "instructions",
    reason: "announces new instructions that replace the reader's",
    pattern:
      /\b(?:your\s+(?:new|real|true|actual|only)\s+(?:instructions?|task|goal|purpose|objective|mission|job)\s+(?:is|are|will\s+be)|(?:new|updated|real|true|actual|revised|override)\s+instructions?\s*:|(?:important|attention|note|message|instructions?)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:ai|llm|assistant|language\s+model|chatbot|ai\s+agent|agent|model)s?\s*(?:reading\s+this\s*)?[:,!-])/gi,
  },
  {
    name: "jailbreak_marker",
    needs: anyOf("<|", "inst]", "sys>>", "system", "instructions>", "dan", "developer", "anything", "jailbreak"),
    flag: "instructions",
    reason: "carries a known jailbreak or chat-template marker",
    pattern:
      /<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>|\[\/?INST\]|<<\/?SYS>>|<\/?(?:system|system_prompt|instructions)>|\b(?:DAN\s+mode|developer\s+mode\s+(?:enabled|on|activated)|do\s+anything\s+now|jailbreak\s+(?:mode|prompt|enabled|activated))\b/gi,
  },
  { name: "hidden_text", flag: "instructions", reason: "contains invisible characters (zero-width, bidi control or tag characters) that can hide text from a person", pattern: HIDDEN },
  { name: "hidden_text", flag: "instructions", reason: "contains invisible characters (zero-width, bidi control or tag characters) that can hide text from a person", pattern: LONE_ZWJ },
  { name: "hidden_text", flag: "instructions", reason: "contains invisible characters (zero-width, bidi control or tag characters) that can hide text from a person", pattern: TAG_CHARS },
];

/** Commands and links to run. */
const LINK_RULES: Rule[] = [
  {
    name: "pipe_to_shell",
    needs: anyOf("|"),
    flag: "links",
    reason: "downloads a script and pipes it into a shell or interpreter",
    pattern: /\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n|;&]{0,200}\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|z|da|k|c|tc|fi)?sh|iex|invoke-expression|python[23]?|node|perl|ruby|php)\b/gi,
  },
  {
    name: "shell_substitution",
    needs: anyOf("<(", "$(", "iex", "invoke-expression"),
    flag: "links",
    reason: "runs what a download prints (process or command substitution)",
    pattern: /(?:<\(|\$\()\s*(?:curl|wget|iwr|irm|invoke-webrequest)\b|\b(?:iex|invoke-expression)\s*\(?\s*(?:\(?\s*new-object\s+net\.webclient|\(?\s*(?:iwr|irm|invoke-webrequest|invoke-restmethod)\b)/gi,
  },
  {
    name: "powershell_encoded",
    needs: anyOf("powershell", "pwsh"),
    flag: "links",
    reason: "runs an encoded PowerShell command",
    pattern: /\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,80}?\s[-/](?:e|ec|enc|encodedcommand)\s+[A-Za-z0-9+/=]{16,}/gi,
  },
  {
    name: "script_url",
    needs: anyOf("script:"),
    flag: "links",
    reason: "a javascript:/vbscript: URL runs code when opened",
    pattern: /(?:\]\(\s*|(?:href|src|action|url)\s*=\s*["']?\s*|<\s*)(?:javascript|vbscript|livescript):|\b(?:javascript|vbscript):[A-Za-z_$][\w$.]*\s*\(/gi,
  },
  {
    name: "data_url",
    needs: anyOf("data:"),
    flag: "links",
    reason: "a data: URL carrying a page or script runs when opened",
    pattern: /\bdata:(?:text\/(?:html|javascript|x-javascript|ecmascript|vbscript)|application\/(?:javascript|x-javascript|ecmascript|x-sh|x-msdownload|hta|xhtml\+xml))[;,]/gi,
  },
  {
    name: "run_link",
    needs: anyOf("://"),
    flag: "links",
    reason: "tells the reader to download and run a program from a link",
    pattern:
      /\b(?:run|execute|exec|launch|install|open|download|start)\b[^\n]{0,60}?\b(?:https?|ftp):\/\/[^\s"'<>)\]]{1,300}?\.(?:sh|bash|ps1|psm1|bat|cmd|exe|msi|scr|vbs|hta|jar|apk|dmg|pkg|bin|run|appimage|command)(?=$|[\s"'<>)\]?#])/gim,
  },
  {
    name: "follow_link",
    needs: anyOf("://"),
    flag: "links",
    reason: "tells the reader to open a link and do what it says",
    pattern:
      /\b(?:open|visit|fetch|read|load|browse\s+to|go\s+to|navigate\s+to|check)\b[^\n]{0,40}?\b(?:https?|ftp):\/\/\S{1,300}?[^\n]{0,80}?\b(?:and|then)\s+(?:follow|obey|execute|run|carry\s+out|do\s+(?:what|as|everything)|apply|comply\s+with)\s+(?:the\s+|its\s+|any\s+|all\s+)?(?:instructions?|commands?|steps|directions|orders|scripts?|code|files?|payloads?|programs?|it|them|what|everything|as)\b/gi,
  },
];

const CREDENTIAL_REASON = "contains what looks like a credential (the sanitizer's patterns)";

type Hit = { flag: PoisonFlagName; rule: string; reason: string; start: number; end: number; masked?: string };

/** The part of a match its replacement removed: what is between their common prefix and suffix. */
function removedPart(match: string, replaced: string): string {
  let head = 0;
  while (head < match.length && head < replaced.length && match[head] === replaced[head]) head++;
  let tail = 0;
  while (tail < match.length - head && tail < replaced.length - head && match[match.length - 1 - tail] === replaced[replaced.length - 1 - tail]) tail++;
  return match.slice(head, match.length - tail);
}

/**
 * A value the sanitizer removes is shown as a credential unless it reads as a
 * word or a placeholder: without a digit and shorter than 24 characters
 * ("Basic authentication", `user:pass@`, `password: 'secret'`, YOUR_TOKEN).
 * Those are still removed before storing where the sanitizer runs.
 */
const credentialLike = (value: string) => /\d/.test(value) || value.length >= 24;

/** A long random-looking run counts only where the words just before it name a secret (a hash in a URL does not). */
const SECRET_CONTEXT = /(?:key|token|secret|passw(?:or)?d|credential|auth\w*|bearer|api|signature)\W{0,12}$/i;

/** What a text must hold for each credential rule to match at all (a necessary condition, as a rule's `needs`). */
const CREDENTIAL_NEEDS: Record<string, (text: string, lower: string) => boolean> = {
  private_key: (t) => t.includes("PRIVATE KEY"),
  url_password: (t) => t.includes("://") && t.includes("@"),
  bearer: (t) => t.includes("Bearer") || t.includes("Token") || t.includes("Basic"),
  jwt: (t) => t.includes("eyJ"),
  assignment: (_t, l) => anyOf("pass", "pwd", "secret", "token", "key")(l),
};
const SECRET_WORDS = anyOf("key", "token", "secret", "passw", "credential", "auth", "bearer", "api", "signature");

/** Every credential span of a text: the sanitizer's rules whose replacement changes the match, then high-entropy runs. */
function credentialSpans(text: string, lower: string): Hit[] {
  const hits: Hit[] = [];
  for (const rule of CREDENTIAL_RULES) {
    if (CREDENTIAL_NEEDS[rule.name] && !CREDENTIAL_NEEDS[rule.name](text, lower)) continue;
    for (const m of matchesOf(rule.pattern, text)) {
      const replaced = typeof rule.replace === "string" ? rule.replace : rule.replace(...(m as unknown as string[]), String(m.index), text);
      if (replaced === m[0] || !credentialLike(removedPart(m[0], replaced))) continue;
      hits.push({ flag: "credentials", rule: rule.name, reason: CREDENTIAL_REASON, start: m.index, end: m.index + m[0].length, masked: replaced });
    }
  }
  for (const m of SECRET_WORDS(lower) ? matchesOf(SECRET_RUN, text) : []) {
    if (!looksLikeSecret(m[0]) || hits.some((h) => h.start <= m.index && h.end >= m.index + m[0].length)) continue;
    if (!SECRET_CONTEXT.test(text.slice(Math.max(0, m.index - 40), m.index))) continue;
    hits.push({ flag: "credentials", rule: "high_entropy", reason: "a long random-looking string right after a word that names a secret", start: m.index, end: m.index + m[0].length, masked: PLACEHOLDERS.secret });
  }
  return hits;
}

/** HTML comments whose text speaks to an AI and tells it something, paired by index (no regex over the body). */
function commentDirectives(text: string): Hit[] {
  const hits: Hit[] = [];
  let from = 0;
  for (;;) {
    const open = text.indexOf("<!--", from);
    if (open < 0) return hits;
    const close = text.indexOf("-->", open + 4);
    const end = close < 0 ? text.length : close + 3;
    const body = text.slice(open + 4, close < 0 ? text.length : close);
    if (/\b(?:ai|llms?|assistants?|language\s+models?|chatbots?|chatgpt|claude|gpt-?\d?|copilot|agents?|models?)\b/i.test(body) && /\b(?:you|your|must|always|never|ignore|do\s+not|don't|instead|pretend|reply|respond|say|tell)\b/i.test(body)) {
      hits.push({ flag: "instructions", rule: "comment_directive", reason: "an HTML comment (invisible when rendered) speaks to an AI reader", start: open, end });
    }
    if (close < 0) return hits;
    from = end;
  }
}

function ruleHits(text: string, lower: string): Hit[] {
  const hits: Hit[] = [];
  for (const rule of [...INSTRUCTION_RULES, ...LINK_RULES]) {
    if (rule.needs && !rule.needs(lower)) continue;
    for (const m of matchesOf(rule.pattern, text)) {
      if (m[0].length === 0) continue;
      hits.push({ flag: rule.flag, rule: rule.name, reason: rule.reason, start: m.index, end: m.index + m[0].length });
      break;
    }
  }
  return hits;
}

const spelled = (c: string) => `<U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}>`;

/** text[from, to) with each credential span in it replaced by its mask. */
function masked({ text, credentials, from, to }: { text: string; credentials: Hit[]; from: number; to: number }): string {
  let out = "";
  let at = from;
  for (const c of credentials.filter((s) => s.end > from && s.start < to).sort((a, b) => a.start - b.start)) {
    // A credential the window starts inside (or one overlapping the last) is masked too: never its tail in clear.
    if (c.end <= at) continue;
    out += text.slice(at, Math.max(at, c.start)) + (c.masked ?? PLACEHOLDERS.secret);
    at = c.end;
  }
  if (at < to) out += text.slice(at, to);
  return out;
}

/**
 * `text` with every credential in it masked as the flags' excerpts mask them (the sanitizer's patterns, then
 * high-entropy runs after a word naming a secret), for showing stored text that may hold one (the review queue's
 * excerpt). Up to POISON_MAX_FIELD_CHARS are scanned; the rest is left out, never shown unscanned.
 */
export function maskCredentials({ text }: { text: string }): string {
  const scanned = text.length > POISON_MAX_FIELD_CHARS ? text.slice(0, POISON_MAX_FIELD_CHARS) : text;
  return masked({ text: scanned, credentials: credentialSpans(scanned, scanned.toLowerCase()), from: 0, to: scanned.length });
}

/** The match with context, credentials in it masked, invisible characters spelled, whitespace folded. */
function excerptOf({ text, hit, credentials }: { text: string; hit: Hit; credentials: Hit[] }): string {
  const room = Math.max(0, EXCERPT_CHARS - (hit.end - hit.start));
  let from = Math.max(0, hit.start - Math.floor(room / 2));
  let to = Math.min(text.length, hit.end + Math.ceil(room / 2));
  if (hit.end - hit.start > EXCERPT_CHARS) [from, to] = [hit.start, hit.start + EXCERPT_CHARS];
  let out = masked({ text, credentials, from, to });
  out = out.replace(HIDDEN, spelled).replace(LONE_ZWJ, spelled).replace(TAG_CHARS, spelled).replace(/\s+/g, " ");
  return `${from > 0 ? "…" : ""}${out}${to < text.length ? "…" : ""}`;
}

/**
 * Flags of one text: at most one per rule (its first match), in the order
 * instructions, credentials, links. `maxChars` bounds what is read (tests
 * pass Infinity to prove the patterns linear on long hostile text).
 */
export function scanText({ text, field = "text", maxChars = POISON_MAX_FIELD_CHARS }: { text: string; field?: string; maxChars?: number }): PoisonFlag[] {
  const scanned = text.length > maxChars ? text.slice(0, maxChars) : text;
  const lower = scanned.toLowerCase();
  const credentials = credentialSpans(scanned, lower);
  const firstCredential = new Map<string, Hit>();
  for (const c of credentials) if (!firstCredential.has(c.rule) || firstCredential.get(c.rule)!.start > c.start) firstCredential.set(c.rule, c);
  const others = [...ruleHits(scanned, lower), ...commentDirectives(scanned).slice(0, 1)];
  const seen = new Set<string>();
  const hits = [...others.filter((h) => h.flag === "instructions"), ...firstCredential.values(), ...others.filter((h) => h.flag === "links")].filter((h) => {
    const key = `${h.rule}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return hits.map((hit) => ({ flag: hit.flag, rule: hit.rule, reason: hit.reason, field, start: hit.start, end: hit.end, excerpt: excerptOf({ text: scanned, hit, credentials }) }));
}

/** The strings of a field's value with their names: a string as is, list items as field[i], object values as field.key. */
function strings(name: string, value: unknown, out: { field: string; text: string }[]): void {
  if (out.length >= MAX_JSON_FIELDS) return;
  if (typeof value === "string") out.push({ field: name, text: value });
  else if (Array.isArray(value)) value.forEach((v, i) => strings(`${name}[${i}]`, v, out));
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) strings(`${name}.${k}`, v, out);
}

/**
 * The flags of an item from the fields it shows: `fields` maps a field name to
 * its value (a string, a list, or a JSON object whose strings are scanned;
 * null and numbers are skipped). Empty when the item is clean. The same
 * match in two fields counts once (the first field's).
 */
export function poisonFlags({ fields }: { fields: Record<string, unknown> }): PoisonFlag[] {
  const texts: { field: string; text: string }[] = [];
  for (const [name, value] of Object.entries(fields)) strings(name, value, texts);
  const flags: PoisonFlag[] = [];
  // The same match again in another field (a learning's handle repeats its description) is flagged once.
  const seen = new Set<string>();
  for (const { field, text } of texts) {
    for (const flag of scanText({ text, field })) {
      const key = `${flag.rule}\u0000${text.slice(flag.start, flag.end)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (flags.length >= POISON_MAX_FLAGS) return flags;
      flags.push(flag);
    }
  }
  return flags;
}

/**
 * The flags as the CLI prints them under an item: one line each, indented,
 * "⚠ flagged instructions (ignore_previous): reason, in content: “excerpt”". Empty when clean.
 */
export function flagLines({ flags, indent = "  " }: { flags: PoisonFlag[]; indent?: string }): string[] {
  return flags.map((f) => `${indent}⚠ flagged ${f.flag} (${f.rule}): ${f.reason}, in ${f.field}: “${f.excerpt}”`);
}

/** An item as shown: with its poisoning flags. */
export type Flagged<T> = T & { flags: PoisonFlag[] };

/** The item with its `flags` (computed from the fields named). */
export function withFlags<T extends object>({ item, fields }: { item: T; fields: Record<string, unknown> }): Flagged<T> {
  return { ...item, flags: poisonFlags({ fields }) };
}
