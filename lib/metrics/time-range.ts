/**
 * The time range a dashboard's charts show, from the URL: a preset
 * (`range=24h`) or a custom `from`/`to` (UTC, as a datetime-local input sends
 * it), so a link reproduces the view. A custom range is validated against
 * what the rollups keep; its bucket width follows its length.
 */
import { parseRange, RANGES, windowForRange, type RangeKey, type Window } from "./preparers";
import { HOUR_MS, HOUR_RETENTION_MS, MINUTE_MS, MINUTE_RETENTION_MS } from "./rollups";

const DAY_MS = 24 * HOUR_MS;
/** Bucket widths a custom range may get, narrowest first; each tiles the stored minute, quarter-hour or hour rows. */
export const CUSTOM_STEPS_MS = [MINUTE_MS, 5 * MINUTE_MS, 15 * MINUTE_MS, HOUR_MS, 6 * HOUR_MS, DAY_MS] as const;
/** A chart holds at most this many buckets: the narrowest step that fits is used. */
export const MAX_CHART_BUCKETS = 400;
/** The shortest custom range: ten one-minute buckets. */
export const MIN_CUSTOM_RANGE_MS = 10 * MINUTE_MS;
/** `from` and `to` longer than this are refused before parsing. */
export const MAX_TIME_PARAM_CHARS = 32;

export type ChartRange = {
  /** The preset shown, or "custom". */
  key: RangeKey | "custom";
  window: Window;
  /** What the charts cover, for headings: "24h", or "2026-11-28 10:00 – 14:00 UTC". */
  label: string;
  /** The picker's from/to (UTC, YYYY-MM-DDTHH:MM): the custom range as asked, else the preset's window. */
  from: string;
  to: string;
  /** Adjustments the reader is told of: an end in the future moved to now, minutes widened to hours past their retention. */
  notes: string[];
  /** Why the custom range asked for is not shown (the preset `key` is shown instead), or null. */
  error: string | null;
};

/** A time as a datetime-local input holds it, in UTC: "2026-11-28T10:00". */
export function toPickerValue(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16);
}

const readable = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ");

export function formatBucketWidth(stepMs: number): string {
  if (stepMs % DAY_MS === 0) return stepMs === DAY_MS ? "1 day" : `${stepMs / DAY_MS} days`;
  if (stepMs % HOUR_MS === 0) return stepMs === HOUR_MS ? "1 hour" : `${stepMs / HOUR_MS} hours`;
  return stepMs === MINUTE_MS ? "1 minute" : `${stepMs / MINUTE_MS} minutes`;
}

/** A UTC time from the URL (YYYY-MM-DDTHH:MM, optional seconds and Z), or null when it is not one. */
export function parseUtcTime(value: string): number | null {
  if (value.length > MAX_TIME_PARAM_CHARS) return null;
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2}(?:\.\d{1,3})?)?Z?$/.exec(value);
  if (!m) return null;
  const ms = Date.parse(`${m[1]}T${m[2]}${m[3] ?? ":00"}Z`);
  // Date.parse rolls 02-31 over to March: a time must read back as written.
  return Number.isFinite(ms) && new Date(ms).toISOString().slice(0, 16) === `${m[1]}T${m[2]}` ? ms : null;
}

function preset({ key, now, error, from, to }: { key: RangeKey; now: number; error?: string; from?: string; to?: string }): ChartRange {
  const window = windowForRange({ range: key, now });
  return { key, window, label: key, from: from ?? toPickerValue(now - RANGES[key].ms), to: to ?? toPickerValue(now), notes: [], error: error ?? null };
}

/**
 * The charts' range from the URL's `range`, `from` and `to`. With both `from`
 * and `to` it is custom: each a UTC time, `from` before `to`, at least
 * MIN_CUSTOM_RANGE_MS long and no older than the hour rollups' retention;
 * an end after now is moved to now. The bucket is the narrowest of
 * CUSTOM_STEPS_MS that keeps the chart within MAX_CHART_BUCKETS, and at least
 * an hour where the range reaches past the minute rows' retention. A range
 * that cannot be answered says why, and the preset (`range`, else 24h) is shown.
 */
export function parseChartRange({ range, from, to, now = Date.now() }: { range?: string; from?: string; to?: string; now?: number }): ChartRange {
  const key = parseRange(range);
  if (from === undefined && to === undefined) return preset({ key, now });
  const fail = (error: string) => preset({ key, now, error, from: from?.slice(0, MAX_TIME_PARAM_CHARS), to: to?.slice(0, MAX_TIME_PARAM_CHARS) });
  if (from === undefined || to === undefined) return fail(`A custom range needs both from and to (the ${key} range is shown).`);
  const f = parseUtcTime(from);
  const asked = parseUtcTime(to);
  if (f === null) return fail(`from is not a time: use YYYY-MM-DDTHH:MM in UTC (the ${key} range is shown).`);
  if (asked === null) return fail(`to is not a time: use YYYY-MM-DDTHH:MM in UTC (the ${key} range is shown).`);
  const notes: string[] = [];
  let t = asked;
  if (t > now) {
    t = now;
    notes.push("to is in the future: the charts end now.");
  }
  if (f >= t) return fail(`from must be before to${asked > now ? " and before now" : ""} (the ${key} range is shown).`);
  if (t - f < MIN_CUSTOM_RANGE_MS) return fail(`A range is at least ${formatBucketWidth(MIN_CUSTOM_RANGE_MS)} long (the ${key} range is shown).`);
  const oldest = now - HOUR_RETENTION_MS;
  if (f < oldest) {
    return fail(`Metrics are kept for ${HOUR_RETENTION_MS / DAY_MS} days: from must be after ${readable(oldest)} UTC (the ${key} range is shown).`);
  }
  let stepMs: number = CUSTOM_STEPS_MS.find((s) => (t - f) / s <= MAX_CHART_BUCKETS) ?? DAY_MS;
  if (f < now - MINUTE_RETENTION_MS && stepMs < HOUR_MS) {
    stepMs = HOUR_MS;
    notes.push(`Minute detail is kept for ${MINUTE_RETENTION_MS / DAY_MS} days: this range is shown by the hour.`);
  }
  const window = { from: f - (f % stepMs), to: Math.ceil(t / stepMs) * stepMs, stepMs };
  const label = `${readable(window.from)} – ${readable(window.to).slice(readable(window.from).slice(0, 10) === readable(window.to).slice(0, 10) ? 11 : 0)} UTC`;
  return { key: "custom", window, label, from: toPickerValue(f), to: toPickerValue(asked), notes, error: null };
}

/** The URL query that reproduces a range ("range=24h" or "from=…&to=…"), to keep it across other links on the page. */
export function chartRangeQuery(r: ChartRange): string {
  return r.key === "custom" ? `from=${encodeURIComponent(r.from)}&to=${encodeURIComponent(r.to)}` : `range=${r.key}`;
}

/** Whether ticks should name days: the window spans two days or more. */
export function isLongRange(r: ChartRange): boolean {
  return r.window.to - r.window.from >= 2 * DAY_MS;
}
