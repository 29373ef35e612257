/** What a person judges in the rating queue: this answer to this question (the same recall repeated is one judgement). */
type QueueItem = { query: string; artifact: "trace" | "learning"; refId: number };

const judgementKey = (q: QueueItem) => `${q.query.trim().replace(/\s+/g, " ").toLowerCase()}\u0000${q.artifact}\u0000${q.refId}`;

/**
 * The queue as shown: one row per question and answer, in the sample's order,
 * at most `limit`. The sample is drawn larger than shown because an agent that
 * asks the same question often returns the same hit each time.
 */
export function distinctRatingItems<T extends QueueItem>(items: T[], limit: number): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const item of items) {
    const key = judgementKey(item);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(item);
    if (out.length === limit) break;
  }
  return out;
}
