import { percentile } from "./table";

/** Latency samples (ms) per method and corpus size, collected in one run. */
export type SizedSamples = Map<string, Map<number, number[]>>;

export function recordSamples(into: SizedSamples, { method, size, samples }: { method: string; size: number; samples: number[] }): void {
  if (!into.has(method)) into.set(method, new Map());
  into.get(method)!.set(size, samples);
}

export function sizeLabel(n: number): string {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}

/**
 * How cost grows with size: one row per method, p50 at every size measured
 * and the ratio between consecutive sizes. A size a method was not run at is
 * a dash, never a guess.
 */
export function growthRows(samples: SizedSamples): Record<string, string | number>[] {
  const sizes = [...new Set([...samples.values()].flatMap((bySize) => [...bySize.keys()]))].sort((a, b) => a - b);
  return [...samples].map(([method, bySize]) => {
    const p50 = (n: number) => (bySize.has(n) ? percentile(bySize.get(n)!, 50) : undefined);
    const row: Record<string, string | number> = { method };
    for (const n of sizes) row[`p50 ms @${sizeLabel(n)}`] = p50(n) ?? "—";
    sizes.slice(1).forEach((n, i) => {
      const [from, to] = [p50(sizes[i]), p50(n)];
      row[`growth ${sizeLabel(sizes[i])}→${sizeLabel(n)} (size ×${n / sizes[i]})`] = from !== undefined && to !== undefined ? `${(to / from).toFixed(2)}×` : "—";
    });
    return row;
  });
}
