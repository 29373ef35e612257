/**
 * `explain=true`: each stage of a retrieval (lexical, vector, fusion,
 * filters, grouping) with its candidates and time, so a caller can see why
 * a hit ranked where it did. Off by default: nothing is recorded then.
 */
export type ExplainStage = {
  stage: "readiness" | "lexical" | "vector" | "fusion" | "filters" | "grouping";
  ms: number;
  /** Candidates the stage produced (after its own cut). */
  candidates: number;
  /** What the stage did, in a sentence (e.g. the MATCH expression, the model, the floor). */
  detail: string;
  /** The stage's top candidates: store-qualified id and its score there. */
  top: { key: string; rank: number; score: number }[];
};

export type Explain = { stages: ExplainStage[]; total_ms: number };

/** What the query-vector step decided, as the readiness stage needs it (QueryVectorPlan on both backends). */
type ReadinessPlan = { ok: true; fingerprint: { provider: string; model: string }; cacheHit: boolean; ms: number } | { ok: false; fallback: { reason: string; message: string }; ms: number };

const TOP_SHOWN = 10;

export class ExplainRecorder {
  private readonly started = performance.now();
  private readonly stages: ExplainStage[] = [];

  /** Time `work`, then record the stage with what `describe` says of its result. */
  time<T>(stage: ExplainStage["stage"], work: () => T, describe: (r: T) => { candidates: number; detail: string; top?: { key: string; score: number }[] }): T {
    const t0 = performance.now();
    const r = work();
    this.record(stage, performance.now() - t0, describe(r));
    return r;
  }

  /** time() for work that awaits (the PostgreSQL stores). */
  async timeAsync<T>(stage: ExplainStage["stage"], work: () => Promise<T>, describe: (r: T) => { candidates: number; detail: string; top?: { key: string; score: number }[] }): Promise<T> {
    const t0 = performance.now();
    const r = await work();
    this.record(stage, performance.now() - t0, describe(r));
    return r;
  }

  record(stage: ExplainStage["stage"], ms: number, d: { candidates: number; detail: string; top?: { key: string; score: number }[] }): void {
    this.stages.push({ stage, ms: round(ms), candidates: d.candidates, detail: d.detail, top: (d.top ?? []).slice(0, TOP_SHOWN).map((t, i) => ({ key: t.key, rank: i + 1, score: round(t.score, 6) })) });
  }

  /**
   * The readiness stage of search, recall and remember, one wording for all of them on either backend: the
   * query embedded and with what, or why vectors could not answer. `store` names it when several stores were asked.
   */
  readiness(plan: ReadinessPlan, store?: string): void {
    const said = plan.ok ? `query embedded with ${plan.fingerprint.provider}/${plan.fingerprint.model}${plan.cacheHit ? " (cached)" : ""}` : `vectors unusable: ${plan.fallback.reason}: ${plan.fallback.message}`;
    this.record("readiness", plan.ms, { candidates: 0, detail: store === undefined ? said : `${store}: ${said}` });
  }

  result(): Explain {
    return { stages: this.stages, total_ms: round(performance.now() - this.started) };
  }
}

function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
