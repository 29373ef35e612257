import { afterEach, beforeEach, expect, it } from "vitest";
import * as nodeRoute from "@/app/api/v1/stores/[store]/nodes/[id]/route";
import { graphBackend } from "@/lib/graph/backend";
import { seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";
import { expectHubNodeDetailBounded } from "./shared/node-detail-bounds";

let env: TestEnv;
beforeEach(async () => {
  env = await useTestBackend();
  await seedStore("kb");
});
afterEach(async () => env.cleanup());

it("a hub node's detail is bounded — heaviest relations, first frames, oldest evidence — and its totals count everything; the route's answer keeps its contract", async () => {
  await expectHubNodeDetailBounded(graphBackend(), "kb");
  const read = await seedToken({ label: "r", agent_id: "reader", scopes: ["read"] });
  const hub = (await graphBackend().listNodes({ store: "kb", filter: { q: "hub" } })).nodes.find((n) => n.name === "hub")!;
  const r = await callRoute(nodeRoute.GET, { token: read, params: { store: "kb", id: hub.id } });
  expect(r.status).toBe(200);
  expect(r.json.totals).toEqual({ frames: 105, outgoing: 230, incoming: 1 });
  expect(r.json.outgoing).toHaveLength(200);
  expect(r.json.outgoing[0].evidence_total).toBe(25);
});
