import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as memoriesPOST } from "@/app/api/v1/stores/[store]/memories/route";
import { POST as searchPOST } from "@/app/api/v1/stores/[store]/search/route";
import { POST as rememberPOST } from "@/app/api/v1/stores/[store]/remember/route";
import { POST as thoughtsPOST } from "@/app/api/v1/stores/[store]/thoughts/route";
import { POST as tracesPOST } from "@/app/api/v1/stores/[store]/traces/route";
import { POST as recallPOST } from "@/app/api/v1/stores/[store]/recall/route";
import { POST as tasksPOST } from "@/app/api/v1/tasks/route";
import { GET as healthGET } from "@/app/api/v1/stores/[store]/health/route";
import { GET as activityGET } from "@/app/api/v1/activity/route";
import { POST as storesPOST } from "@/app/api/v1/stores/route";
import { runMetricsPass } from "@/lib/metrics/loop";
import { observeFailedDialecticSessions } from "@/lib/governance/health-events";
import { callRoute } from "../helpers";
import { drainEmbeddings, seedToken, useTestBackend, type TestEnv } from "../backend";
import { patience } from "../fixtures/patience";

/**
 * With DATABASE_URL a replica keeps no state of its own: after every kind of
 * request and every background pass (embed worker, metrics, health events)
 * its DATA_DIR holds no governance.db and no store — a replica restarted
 * elsewhere, or a second one, sees exactly the same.
 */
let env: TestEnv;
let admin: string;
beforeAll(async () => {
  env = await useTestBackend();
  admin = await seedToken({ label: "ops", agent_id: "ops", scopes: ["admin"] });
}, patience(120_000));
afterAll(() => env.cleanup());

describe("PostgreSQL mode: nothing local after real work", () => {
  it("serves writes, reads, background passes and the explorer without creating governance.db or a store folder", async () => {
    const ok = (r: { status: number; json: unknown }, status = 200) => expect(r.status, JSON.stringify(r.json)).toBe(status);
    ok(await callRoute(storesPOST, { token: admin, body: { name: "notes" } }), 201);
    ok(await callRoute(memoriesPOST, { token: admin, params: { store: "notes" }, body: { path: "ops/backups", body: "Backups run nightly at two." } }), 201);
    ok(await callRoute(thoughtsPOST, { token: admin, params: { store: "notes" }, body: { content: "The backup job moved to two in the night." } }), 201);
    ok(await callRoute(tracesPOST, { token: admin, params: { store: "notes" }, body: { intent: { verb: "fix", target: "nightly backup" }, shard_type: "ops", outcome: "success" } }), 201);
    await drainEmbeddings(["notes"]);
    ok(await callRoute(searchPOST, { token: admin, params: { store: "notes" }, body: { q: "nightly backups", mode: "hybrid" } }));
    ok(await callRoute(rememberPOST, { token: admin, params: { store: "notes" }, body: { query: "when do backups run" } }));
    ok(await callRoute(recallPOST, { token: admin, params: { store: "notes" }, body: { query: "backup failing" } }));
    ok(await callRoute(tasksPOST, { token: admin, body: { intent: "check backups", spec: {} } }), 201);
    ok(await callRoute(healthGET, { token: admin, params: { store: "notes" } }));
    ok(await callRoute(activityGET, { token: admin, url: "http://127.0.0.1/api/v1/activity?limit=5" }));
    await runMetricsPass({ prune: true });
    await observeFailedDialecticSessions();
    const entries = fs.readdirSync(env.dataDir);
    expect(entries).not.toContain("governance.db");
    expect(entries).not.toContain("stores");
  }, patience(120_000));
});
