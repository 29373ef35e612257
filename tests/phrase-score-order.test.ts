import { describe, expect, it } from "vitest";
import { ORDER_DEPTH, scoreOrderOf } from "@/lib/retrieval/bm25-top";

// A broad phrase's cached scores are read best-first by the threshold
// algorithm, which never reads past ORDER_DEPTH rows of a list. At 1M chunks
// sorting a whole list held the event loop ~0.9 s in the build's last turn;
// only the head is sorted now. What a user would notice if it were wrong:
// a broad query's later answers would differ from FTS5's — so the head must
// be exactly the full sort's head, ties (by rowid) included.

function list(n: number, seed: number, distinct: number) {
  let x = seed;
  const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const ids = new Float64Array(n);
  const scores = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    ids[i] = i * 3 + 1;
    // Few distinct values: many ties, some straddling the cut.
    scores[i] = Math.floor(rnd() * distinct) / 7;
  }
  return { ids, scores };
}

function fullOrder({ ids, scores }: { ids: Float64Array; scores: Float64Array }): number[] {
  return Array.from({ length: ids.length }, (_, i) => i).sort((a, b) => scores[b] - scores[a] || ids[a] - ids[b]);
}

describe("a phrase list's score order", () => {
  it.each([
    ["short list (sorted whole)", 5_000, 1_000],
    ["long list, distinct scores", 3 * ORDER_DEPTH, 10_000_000],
    ["long list, heavy ties at the cut", 2 * ORDER_DEPTH + 17, 40],
    ["long list, one score", ORDER_DEPTH + 5, 1],
  ])("%s: its head is the full sort's head", (_, n, distinct) => {
    const l = list(n, n + distinct, distinct);
    const order = scoreOrderOf(l);
    const want = fullOrder(l);
    const head = Math.min(n, ORDER_DEPTH);
    expect(order.length).toBeGreaterThanOrEqual(head);
    expect(Array.from(order.subarray(0, head))).toEqual(want.slice(0, head));
    // A long list with scores that do not all tie is sorted only at its head (a 1M-row list: 112 vs 905 ms here);
    // every row kept scores at least as well as every row left out.
    if (n > ORDER_DEPTH && distinct > 1) {
      expect(order.length).toBeLessThan(n);
      expect(l.scores[order[order.length - 1]]).toBeGreaterThan(l.scores[want[order.length]]);
    }
  });
});
