export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export function formatTime(ms: number | null | undefined): string {
  if (!ms) return "—";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + "Z";
}

/** One fixed locale, so the server's render and the browser's agree. */
const COUNT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const DECIMAL = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

/** A count with thousands separators: 12,345. */
export function formatCount(n: number | null | undefined): string {
  return n === null || n === undefined ? "—" : COUNT.format(n);
}

/** A number with thousands separators and at most `digits` decimals: 1,234.5. */
export function formatNumber(n: number | null | undefined, digits = 2): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  return digits === 2 ? DECIMAL.format(n) : new Intl.NumberFormat("en-US", { maximumFractionDigits: digits }).format(n);
}
