import { describe, expect, it } from "vitest";
import { answerReason, confidenceBand, fuseScores, fusionPolicyFor, termCoverage, weakAnswerReason } from "@/lib/retrieval";
import { contextScores } from "@/lib/retrieval/context";

describe("confidence bands", () => {
  it("read the share of the query's words a hit holds, by stem", () => {
    const terms = ["caroline", "support", "groups"];
    expect(termCoverage({ terms, text: "Caroline: I went to the LGBTQ support group yesterday" })).toBe(1);
    expect(termCoverage({ terms, text: "Caroline: hey Mel, good to see you" })).toBeCloseTo(1 / 3, 6);
    expect(termCoverage({ terms, text: "Melanie: the kids loved the camping trip" })).toBe(0);
    expect(confidenceBand({ coverage: 1, cosine: null, provider: "builtin", floor: 0.12 })).toBe("high");
    expect(confidenceBand({ coverage: 0.4, cosine: null, provider: "builtin", floor: 0.12 })).toBe("medium");
    expect(confidenceBand({ coverage: 0.2, cosine: null, provider: null, floor: 1 })).toBe("low");
  });

  it("never take the builtin vectors' word for it, but a neural model's close neighbour counts", () => {
    expect(confidenceBand({ coverage: 0, cosine: 0.9, provider: "builtin", floor: 0.12 })).toBe("low");
    expect(confidenceBand({ coverage: 0, cosine: 0.6, provider: "openai", floor: 0.05 })).toBe("high");
    expect(confidenceBand({ coverage: 0, cosine: 0.35, provider: "openai", floor: 0.05 })).toBe("medium");
  });
});

describe("weak answers say so (golden)", () => {
  it("weak_match when every hit is low, with the words it looked for", () => {
    expect(weakAnswerReason({ bands: ["low", "low", "low"], terms: ["quantum", "chromodynamics", "lattice"] })).toEqual({
      code: "weak_match",
      message: "no hit holds even a third of the query's words (quantum, chromodynamics, lattice); the 3 hit(s) are the nearest there is, not answers",
    });
    expect(weakAnswerReason({ bands: ["low", "medium"], terms: ["x"] })).toBeNull();
    expect(weakAnswerReason({ bands: [], terms: ["x"] })).toBeNull();
  });

  it("a fallback keeps its code and adds that the hits are weak; an empty answer still says why it is empty", () => {
    const weak = weakAnswerReason({ bands: ["low"], terms: ["zeppelin"] });
    expect(answerReason({ found: 1, searchable: 1, fallback: null, belowFloor: 0, weak })).toEqual(weak);
    expect(answerReason({ found: 1, searchable: 1, fallback: { reason: "backlog", message: "12 items wait for vectors", count: 12 }, belowFloor: 0, weak })).toEqual({
      code: "backlog",
      message: "12 items wait for vectors; no hit holds even a third of the query's words (zeppelin); the 1 hit(s) are the nearest there is, not answers",
      count: 12,
    });
    expect(answerReason({ found: 0, searchable: 1, fallback: null, belowFloor: 0, weak: null })).toEqual({ code: "no_match", message: "nothing matched the query" });
  });
});

describe("the one fusion policy", () => {
  it("is keyed by the model's fingerprint, and a relevance is never below its lexical evidence", () => {
    const builtin = fusionPolicyFor({ fingerprint: { provider: "builtin", model: "hashed-ngrams-384", id: "abc" } });
    expect(builtin).toMatchObject({ key: "builtin/hashed-ngrams-384#abc", source: "provider", ranks: { fts: 1, vec: 0.004 }, scoreVector: 0 });
    expect(fusionPolicyFor({ fingerprint: { provider: "openai", model: "m" }, override: { vec: 0.5 } })).toMatchObject({ source: "request", ranks: { fts: 1, vec: 0.5 } });
    expect(fusionPolicyFor({ fingerprint: null })).toMatchObject({ key: "lexical", scoreVector: 0 });
    const neural = fusionPolicyFor({ fingerprint: { provider: "openai", model: "m" } });
    for (const policy of [builtin, neural]) for (const lexical of [0, 0.3, 1]) for (const vector of [undefined, 0, 0.5, 1]) expect(fuseScores({ lexical, vector, policy })).toBeGreaterThanOrEqual(lexical);
    // builtin's cosine never reorders what the words found; a neural model's counts as much as the words.
    expect(fuseScores({ lexical: 1, vector: 0, policy: builtin })).toBeGreaterThan(fuseScores({ lexical: 0.9, vector: 1, policy: builtin }));
    expect(fuseScores({ lexical: 0.5, vector: 0.8, policy: neural })).toBeCloseTo(1.3, 9);
  });

  it("gives a row half of what each neighbouring hit's lexical score has over its own, as context", () => {
    const ctx = contextScores({
      hits: [
        { seq: 10, lexical: 1 },
        { seq: 20, lexical: 0.4 },
        { seq: 21, lexical: 0.3 },
      ],
      neighbours: [
        { hit: 10, before: 9, after: 11 },
        { hit: 20, before: 19, after: 21 },
        { hit: 21, before: 20, after: 22 },
      ],
    });
    // 21 holds words itself: it gains only what 20 has over it; 20 gains nothing from the weaker 21.
    expect([...ctx].map(([k, v]) => [k, Math.round(v * 1e9) / 1e9])).toEqual([
      [9, 0.5],
      [11, 0.5],
      [19, 0.2],
      [21, 0.05],
      [22, 0.15],
    ]);
  });
});
