import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { LedgerVerdictBadge } from "@/components/ledger-verdict-badge";
import { explainVerdict, listTasksQuerySchema, verdictLabel } from "@/lib/governance/ledger";

describe("a task whose checks are not all in reads 'awaiting checks', not failed", () => {
  it("badges a critic-passed task still waiting on its runner check as 'awaiting checks', keeping the machine value", () => {
    const verdict = explainVerdict({ requiredChecks: ["critic", "runner"], runs: [], validations: [{ validation_id: "v1", critic_passed: true, runner_passed: null }] });
    expect(verdict.verdict).toBe("pending");
    const html = renderToStaticMarkup(createElement(LedgerVerdictBadge, { value: verdict.verdict, testId: "task-verdict" }));
    expect(html).toContain(">awaiting checks</span>");
    expect(html).toContain('data-value="pending"');
    expect(html).not.toContain(">pending<");
  });

  it("leaves passed, failed and run or session words as they are", () => {
    expect(["passed", "failed", "running", "resolved"].map(verdictLabel)).toEqual(["passed", "failed", "running", "resolved"]);
  });

  it("keeps the outcome filter's URL and API value stable", () => {
    expect(listTasksQuerySchema.parse({ outcome: "pending" }).outcome).toBe("pending");
  });
});
