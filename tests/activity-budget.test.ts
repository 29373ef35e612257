import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as activityRoute } from "@/app/api/v1/activity/route";
import { isAppError } from "@/lib/errors";
import { activityFilterSchema, activitySummarySchema, listActivity, summarizeActivity } from "@/lib/governance/activity";
import { governanceSql, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";
import { patience } from "./fixtures/patience";

/**
 * The activity explorer reads a window of up to 100k audit rows per request:
 * it runs within the query budget, so a filter that matches little in a long
 * log answers 422 query_too_expensive, naming how to narrow it, instead of
 * holding the database for as long as the scan takes.
 */
let env: TestEnv;
let admin = "";

beforeAll(async () => {
  env = await useTestBackend();
  admin = await seedToken({ label: "a", agent_id: "activity-admin", scopes: ["admin"] });
  // A long log: rows written straight into the table (the chain is not what this test reads).
  await governanceSql(
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < 150000)
     insert into audit_log (id, ts, actor, action, target, reason, details, prev_hash, hash)
     select (select coalesce(max(id), 0) from audit_log) + i, 1700000000000 + i, 'agent:busy', 'memory.update', 'store:default/memory:m' || i, null, null, 'x', 'x' from n`,
  );
}, patience(120_000));
afterAll(async () => env?.cleanup());

const rare = activityFilterSchema.parse({ action: "nothing.matches" });

/**
 * The budget is enforced by a watchdog thread: on a machine loaded enough that the thread wakes after a short scan
 * has already ended, one call can finish. The refusal must come within a few tries (a budget that never trips fails).
 */
async function firstRefusal(call: () => Promise<unknown>): Promise<unknown> {
  let last: unknown;
  for (let i = 0; i < 3; i++) {
    last = await call().catch((e: unknown) => e);
    if (isAppError(last)) return last;
  }
  return last;
}

describe("activity reads within the query budget", () => {
  it("a page whose filter scans the whole window past the budget answers query_too_expensive with the way to narrow it", async () => {
    const over = await firstRefusal(() => listActivity({ filter: rare, budgetMs: 1 }));
    expect(isAppError(over) && over.code).toBe("query_too_expensive");
    expect((over as Error).message).toContain("narrow the activity filter");
  });

  it("so does a summary", async () => {
    const over = await firstRefusal(() => summarizeActivity({ filter: activitySummarySchema.parse({ agent: "busy" }), budgetMs: 1 }));
    expect(isAppError(over) && over.code).toBe("query_too_expensive");
  });

  it("within the budget the same page answers, saying the window ran out", async () => {
    const page = await callRoute(activityRoute, { token: admin, url: "http://x/api/v1/activity?action=nothing.matches" });
    expect(page.status).toBe(200);
    expect(page.json.complete).toBe(false);
  });
});
