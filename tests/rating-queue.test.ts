import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { distinctRatingItems } from "@/app/(dashboard)/reflection/_parts/rating-queue";
import type { TraceInput } from "@/lib/recall/descriptors";
import { recallBackend } from "@/lib/recall/backend";
import { drainEmbeddings, seedStore, seedTrace, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;
const store = "rated";

beforeEach(async () => {
  env = await useTestBackend();
  await seedStore(store);
});
afterEach(async () => env.cleanup());

const AUTH_FAILURE: TraceInput = {
  intent: { verb: "fix", target: "auth token refresh" },
  shard_type: "backend",
  key_files: ["lib/auth/session.ts"],
  outcome: "failure",
  key_issue: "refresh token rotated twice, causing 401 loops",
  error_tags: ["auth"],
};

describe("the recall rating queue", () => {
  it("shows one row per question and answer when an agent repeats the same recall", async () => {
    await seedTrace(store, AUTH_FAILURE);
    await drainEmbeddings([store]);
    const ask = (target: string) => recallBackend().recall({ store, agentId: "a1", input: { intent: { verb: "fix", target } } });
    for (let i = 0; i < 6; i++) await ask("auth token refresh");
    await ask("Auth  token refresh");
    await ask("token refresh loops");

    const sample = await recallBackend().listRatingQueue({ store, limit: 40 });
    // The sample itself repeats the same judgement (the bug as it showed on the page).
    expect(sample.length).toBeGreaterThan(2);
    const shown = distinctRatingItems(sample, 8);
    expect(shown.map((q) => q.query.toLowerCase().replace(/\s+/g, " ")).sort()).toEqual(["auth token refresh", "token refresh loops"].map((q) => expect.stringContaining(q)));
    expect(new Set(shown.map((q) => `${q.query.toLowerCase().replace(/\s+/g, " ")}|${q.artifact}|${q.refId}`)).size).toBe(shown.length);
  });

  it("keeps the sample's order and stops at the limit", () => {
    const items = [1, 2, 3, 4].map((refId) => ({ query: `q${refId % 2}`, artifact: "trace" as const, refId }));
    expect(distinctRatingItems([...items, ...items], 3).map((q) => q.refId)).toEqual([1, 2, 3]);
  });
});
