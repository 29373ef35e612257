import fs from "node:fs";
import { expect, test, type APIRequestContext } from "@playwright/test";
import { bootstrapHeaders, E2E, signIn } from "./fixtures";

// Unique per run: specs share one server and DATA_DIR.
const RUN = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const H = (c: string) => c.repeat(64);

async function agentToken(request: APIRequestContext, agentId: string): Promise<Record<string, string>> {
  const res = await request.post("/api/v1/tokens", { headers: bootstrapHeaders(), data: { label: agentId, agent_id: agentId, scopes: ["write"] } });
  expect(res.status()).toBe(201);
  return { authorization: `Bearer ${(await res.json()).token}` };
}

test("two agents run a full review through the API and a person reads it on the session page", async ({ request, page }) => {
  const pausedId = `e2e-builder-${RUN}`;
  const reviewerId = `e2e-critic-${RUN}`;
  const paused = await agentToken(request, pausedId);
  const reviewer = await agentToken(request, reviewerId);
  const sessionId = `e2e-session-${RUN}`;
  const topic = `Nightly reindex paused ${RUN}`;
  const url = `/api/v1/dialectic/sessions/${sessionId}/messages`;

  expect((await request.post("/api/v1/dialectic/sessions", { headers: paused, data: { session_id: sessionId, topic, reviewer_agent_id: reviewerId } })).status()).toBe(201);
  expect((await request.post(url, { headers: reviewer, data: { message_type: "thesis", reasoning: "not mine to post" } })).status()).toBe(409);
  expect(
    (await request.post(url, { headers: paused, data: { message_type: "thesis", reasoning: "I paused the reindex: 40% of chunks changed hash at once.", root_cause: "a chunking rule changed without a migration", observed_metrics: { changed_chunks: 4120 } } })).status(),
  ).toBe(201);
  expect((await request.post(url, { headers: reviewer, data: { message_type: "antithesis", reasoning: "The hashes changed because line endings were normalized; the content is the same.", concerns: ["re-embedding 4120 chunks costs an hour"] } })).status()).toBe(201);
  expect(
    (await request.post(url, { headers: reviewer, data: { message_type: "synthesis", reasoning: "Bump chunking_version and re-embed overnight.", proposed_conditions: ["bump chunking_version to 2", "re-embed in the nightly window"], agrees: true } })).status(),
  ).toBe(201);
  const last = await request.post(url, { headers: paused, data: { message_type: "synthesis", reasoning: "Agreed.", agrees: true } });
  expect(last.status()).toBe(201);
  expect((await last.json()).session.status).toBe("resolved");

  await signIn(page, "admin", E2E.adminPassword);
  await page.goto(`/sessions?topic=${encodeURIComponent(RUN)}`);
  await page.getByRole("link", { name: topic }).click();
  await expect(page.getByRole("heading", { level: 1, name: topic })).toBeVisible();
  await expect(page.getByTestId("paused-agent")).toHaveText(pausedId);
  await expect(page.getByTestId("reviewer-agent")).toHaveText(reviewerId);
  await expect(page.getByTestId("session-status")).toHaveText("resolved");
  await expect(page.getByTestId("signature-status")).toHaveText("verified (4 messages)");

  const transcript = page.getByTestId("transcript");
  await expect(transcript.getByRole("article")).toHaveCount(4);
  await expect(page.getByRole("article", { name: `Thesis by ${pausedId}`, exact: true })).toContainText("a chunking rule changed without a migration");
  await expect(page.getByRole("article", { name: `Antithesis by ${reviewerId}`, exact: true })).toContainText("re-embedding 4120 chunks costs an hour");
  await expect(page.getByTestId("message-4")).toContainText("agrees");

  const resolution = page.getByTestId("resolution");
  await expect(resolution.getByRole("heading", { name: "Resolution" })).toBeVisible();
  await expect(resolution.getByRole("listitem")).toHaveText(["bump chunking_version to 2", "re-embed in the nightly window"]);

  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Export JSON" }).click()]);
  const snapshot = JSON.parse(fs.readFileSync(await download.path(), "utf8"));
  expect(snapshot.sessions).toHaveLength(1);
  expect(snapshot.sessions[0].messages.map((m: { messageType: string }) => m.messageType)).toEqual(["thesis", "antithesis", "synthesis", "synthesis"]);
});

test("a task's runs, validation and artifacts show on the ledger, and the artifact leads back to it", async ({ request, page }) => {
  const agent = await agentToken(request, `e2e-runner-${RUN}`);
  const taskId = `e2e-task-${RUN}`;
  expect((await request.post("/api/v1/tasks", { headers: agent, data: { task_id: taskId, intent: `Summarize release notes ${RUN}`, spec: { source: "CHANGELOG.md" } } })).status()).toBe(201);
  expect(
    (
      await request.post(`/api/v1/tasks/${taskId}/runs`, {
        headers: agent,
        data: { run_id: `${taskId}-r1`, skill: "summarize", input_hash: H("a"), runner_version: "1.4.0", output_hash: H("b"), exit_code: 0, artifacts: [{ artifact_type: "summary", artifact_id: `notes-${RUN}`, store: "default" }] },
      })
    ).status(),
  ).toBe(201);
  // The critic's check alone: the task awaits its runner check, which is not a failure.
  expect((await request.post(`/api/v1/tasks/${taskId}/validations`, { headers: agent, data: { validation_id: `${taskId}-critic`, run_id: `${taskId}-r1`, critic_passed: true, runner_passed: null } })).status()).toBe(201);
  await signIn(page, "admin", E2E.adminPassword);
  await page.goto(`/ledger?requested_by=e2e-runner-${RUN}&outcome=pending`);
  await expect(page.getByTestId("tasks-table")).toContainText("awaiting checks");
  await expect(page.getByRole("combobox", { name: "Outcome" })).toHaveValue("pending");
  expect((await request.post(`/api/v1/tasks/${taskId}/validations`, { headers: agent, data: { run_id: `${taskId}-r1`, critic_passed: true, runner_passed: true } })).status()).toBe(201);

  await page.goto(`/ledger?requested_by=e2e-runner-${RUN}`);
  await page.getByRole("link", { name: taskId }).click();
  await expect(page.getByTestId("task-verdict")).toHaveText("passed");
  await expect(page.getByTestId(`run-${taskId}-r1`)).toContainText("summarize");
  await page.getByRole("link", { name: `summary/notes-${RUN}` }).click();
  await expect(page.getByTestId("provenance-table")).toBeVisible();
  await expect(page.getByRole("link", { name: `Summarize release notes ${RUN}` })).toBeVisible();
});
