/**
 * Known-item scores, as the search-quality bench counts them: the rank of
 * the one answer in the first ten distinct results; hit@1, hit@10 and
 * MRR@10 over the probes. The noise of a figure is what two runs over
 * probe sets of this size may differ by without anything having changed:
 * two standard errors of the mean reciprocal rank, at least NOISE_FLOOR.
 */
import type { Score } from "./report";

export const NOISE_FLOOR = 0.01;

/** 1-based rank of `target` among the first 10 distinct keys, 0 when absent. */
export function rankOf(keys: readonly string[], target: string): number {
  const seen: string[] = [];
  for (const k of keys) {
    if (seen.includes(k)) continue;
    seen.push(k);
    if (k === target) return seen.length;
    if (seen.length === 10) break;
  }
  return 0;
}

export function scoreOf(ranks: readonly number[], fallbacks = 0): Score | null {
  const n = ranks.length;
  if (n === 0) return null;
  const rr = ranks.map((r) => (r > 0 ? 1 / r : 0));
  const mrr10 = rr.reduce((a, b) => a + b, 0) / n;
  const variance = n > 1 ? rr.reduce((a, x) => a + (x - mrr10) ** 2, 0) / (n - 1) : 0;
  return {
    probes: n,
    hit1: ranks.filter((r) => r === 1).length / n,
    hit10: ranks.filter((r) => r > 0).length / n,
    mrr10,
    noise: Math.max(NOISE_FLOOR, 2 * Math.sqrt(variance / n)),
    fallbacks,
  };
}

/** Did `now` fall below `before` by more than the noise of either? */
export function fellBeyondNoise(before: Pick<Score, "mrr10" | "noise">, now: Pick<Score, "mrr10" | "noise">): boolean {
  return before.mrr10 - now.mrr10 > Math.max(before.noise, now.noise);
}

/**
 * Scores of separate probe groups (kinds) as one: the figures weighted by
 * probes, the noise from the pooled spread of reciprocal ranks (each group's
 * spread read back from its noise, so it is exact unless a group's noise
 * was the floor).
 */
export function poolScores(scores: readonly Score[]): Score | null {
  const n = scores.reduce((a, s) => a + s.probes, 0);
  if (n === 0) return null;
  const mean = (f: (s: Score) => number) => scores.reduce((a, s) => a + s.probes * f(s), 0) / n;
  const mrr10 = mean((s) => s.mrr10);
  const within = scores.reduce((a, s) => a + (s.probes - 1) * s.probes * (s.noise / 2) ** 2, 0);
  const between = scores.reduce((a, s) => a + s.probes * (s.mrr10 - mrr10) ** 2, 0);
  const variance = n > 1 ? (within + between) / (n - 1) : 0;
  return {
    probes: n,
    hit1: mean((s) => s.hit1),
    hit10: mean((s) => s.hit10),
    mrr10,
    noise: Math.max(NOISE_FLOOR, 2 * Math.sqrt(variance / n)),
    fallbacks: scores.reduce((a, s) => a + s.fallbacks, 0),
  };
}
