import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePg, getPg } from "@/lib/db/pg";
import { alertQueueIdle } from "@/lib/governance/alert-webhook";
import { abandonDialecticSession, createDialecticSession } from "@/lib/governance/dialectic";
import { listRecentHealthEvents, observeFailedDialecticSessions, observeStoreStatus } from "@/lib/governance/health-events";
import { useTempDataDir } from "../helpers";
import { createTestDatabase, useTwoReplicas } from "./helpers";

/** Health events with DATABASE_URL: one history in PostgreSQL beside the ledger, shared by every replica. */
describe("health events on PostgreSQL", () => {
  const received: Record<string, unknown>[] = [];
  const receiver = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(200).end();
    });
  });
  let env: ReturnType<typeof useTempDataDir>;
  beforeAll(async () => {
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    env = useTempDataDir({ DATABASE_URL: await createTestDatabase(), DUALMIND_ALERT_WEBHOOK_URL: hook });
  });
  afterAll(async () => {
    await alertQueueIdle();
    await closePg();
    env.cleanup();
    await new Promise<void>((r) => receiver.close(() => r()));
  });

  it("a dialectic session that fails on PostgreSQL is one event and one webhook, however often it is seen; Health lists it with its delivery", async () => {
    const handle = await getPg()!;
    const { session } = await createDialecticSession({ handle, input: { topic: "review the plan", reviewer_agent_id: "agent-b" }, agentId: "agent-a" });
    await abandonDialecticSession({ handle, sessionId: session.session_id, agentId: "agent-a", reason: "gave up" });
    expect(await observeFailedDialecticSessions()).toHaveLength(1);
    expect(await observeFailedDialecticSessions()).toHaveLength(0);
    await alertQueueIdle();
    expect(received).toEqual([expect.objectContaining({ kind: "dialectic_failed", subject: session.key, reason: "abandoned by agent-a", agent_id: "agent-a", agent_text: "gave up" })]);
    await expect.poll(async () => (await listRecentHealthEvents())[0]).toMatchObject({ kind: "dialectic_failed", subject: session.key, webhookState: "delivered", webhookAttempts: 1 });
  });

  it("store status changes are recorded once, not on a repeat, not on a first healthy sighting", async () => {
    expect(await observeStoreStatus({ store: "docs", status: "healthy", reason: "ok" })).toBeNull();
    expect(await observeStoreStatus({ store: "docs", status: "degraded", reason: "backlog 1,500 above 1,000" })).toMatchObject({ status: "degraded", previousStatus: "healthy" });
    expect(await observeStoreStatus({ store: "docs", status: "degraded", reason: "backlog 1,600 above 1,000" })).toBeNull();
    expect((await listRecentHealthEvents({ store: "docs" })).map((e) => [e.kind, e.status])).toEqual([
      ["store_status", "degraded"],
      ["dialectic_failed", "failed"],
    ]);
  });
});

describe("two replicas observing one store's change at once", () => {
  const replicas = useTwoReplicas();
  it("record it once", async () => {
    const observe = (i: number) => observeStoreStatus({ handle: i % 2 ? replicas.a() : replicas.b(), store: "shared", status: "provider_down", reason: "provider not answering", now: 1_000 + i });
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => observe(i)));
    expect(answers.filter((e) => e !== null)).toHaveLength(1);
    expect(answers.find((e) => e !== null)).toMatchObject({ store: "shared", status: "provider_down", previousStatus: null });
    const { rows } = await replicas.a().pool.query("select count(*)::int as n from health_events where store = 'shared'");
    expect(rows[0].n).toBe(1);
  });
});
