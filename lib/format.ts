/**
 * The one set of number, size and time formatters for the dashboard. Server
 * components call them, so the time zone is the server's (`TZ`): one team
 * reads one dashboard, and every absolute time names its zone so nobody has
 * to guess. English grouping and plural rules (the dashboard's language).
 */

const LOCALE = "en";

const plural = new Intl.PluralRules(LOCALE);

/**
 * Intl formatters cost tens of microseconds to make and about one to use (a table row's relative and absolute time
 * made two, ~80 µs): each option set's is made once and kept, at most MAX_KEPT of each kind (callers pass a few
 * fixed digit counts and the server's zone; any other is made per call, as before).
 */
const MAX_KEPT = 16;
const numberFormats = new Map<string, Intl.NumberFormat>();
function numberFormat(digits: number, style: "decimal" | "percent" = "decimal"): Intl.NumberFormat {
  const key = `${style}:${digits}`;
  let format = numberFormats.get(key);
  if (!format) {
    format = new Intl.NumberFormat(LOCALE, { style, maximumFractionDigits: digits });
    if (numberFormats.size < MAX_KEPT) numberFormats.set(key, format);
  }
  return format;
}

const dateTimeFormats = new Map<string, Intl.DateTimeFormat>();
function dateTimeFormat(timeZone: string | undefined): Intl.DateTimeFormat {
  // The server's zone apart from every named one (an empty name is refused by Intl, as before).
  const key = timeZone === undefined ? "\u0000server" : timeZone;
  let format = dateTimeFormats.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat(LOCALE, {
      day: "numeric",
      month: "short",
      year: "numeric",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
      timeZoneName: "short",
      timeZone,
    });
    if (dateTimeFormats.size < MAX_KEPT) dateTimeFormats.set(key, format);
  }
  return format;
}

const relativeFormat = new Intl.RelativeTimeFormat(LOCALE, { numeric: "auto" });

/** 157460 → "157,460" ("—" when there is none). */
export function formatCount(n: number | null | undefined): string {
  return n === null || n === undefined ? "—" : numberFormat(0).format(n);
}

/** A decimal with at most `digits` fraction digits, grouped: 1234.5 → "1,234.5". */
export function formatDecimal(n: number, digits = 1): string {
  return numberFormat(digits).format(n);
}

/**
 * A count with its noun, singular or plural by the locale's rule:
 * `formatQuantity(1, "memory", "memories")` → "1 memory", 2 → "2 memories".
 * The plural defaults to the noun + "s".
 */
export function formatQuantity(n: number, noun: string, pluralNoun = `${noun}s`): string {
  return `${formatCount(n)} ${plural.select(n) === "one" ? noun : pluralNoun}`;
}

/** A share 0..1 as a percentage, or "–" when there is none: 0.123 → "12.3%". */
export function formatPercent(x: number | null | undefined, digits = 1): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return "–";
  return numberFormat(digits, "percent").format(x);
}

/** Milliseconds as a person reads a latency: "0.4 ms", "35 ms", "1.2 s". */
export function formatDuration(ms: number): string {
  if (ms < 10) return `${formatDecimal(ms, 1)} ms`;
  if (ms < 1000) return `${formatCount(Math.round(ms))} ms`;
  if (ms < 60_000) return `${formatDecimal(ms / 1000, 1)} s`;
  return `${formatDecimal(ms / 60_000, 1)} min`;
}

/** Binary sizes: 512 → "512 B", 1536 → "1.5 KiB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${formatCount(n)} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${formatDecimal(v, v < 10 ? 1 : 0)} ${units[i]}`;
}

/** A machine-exact UTC timestamp, "2026-11-23 08:41:48Z" (logs, ids, places that sort by text). */
export function formatTime(ms: number | null | undefined): string {
  if (!ms) return "—";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + "Z";
}

/** A number with thousands separators and at most `digits` decimals: 1,234.5 ("—" when there is none). */
export function formatNumber(n: number | null | undefined, digits = 2): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  return formatDecimal(n, digits);
}

/** A local date and time that names its zone: "23 Nov 2026, 09:41:48 CET". */
export function formatDateTime(ms: number | null | undefined, timeZone?: string): string {
  if (!ms) return "—";
  return dateTimeFormat(timeZone).format(ms);
}

const RELATIVE_STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["second", 60],
  ["minute", 60],
  ["hour", 24],
  ["day", 7],
  ["week", 4.35],
  ["month", 12],
  ["year", Number.POSITIVE_INFINITY],
];

/** How long ago (or until) `ms` is from `now`: "5 minutes ago", "in 2 hours", "now". */
export function formatRelative(ms: number, now = Date.now()): string {
  const rtf = relativeFormat;
  let value = (ms - now) / 1000;
  if (Math.abs(value) < 5) return rtf.format(0, "second");
  for (const [unit, size] of RELATIVE_STEPS) {
    if (Math.abs(value) < size) return rtf.format(Math.round(value), unit);
    value /= size;
  }
  return rtf.format(Math.round(value), "year");
}
