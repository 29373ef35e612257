import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GET as metricsGET } from "@/app/api/metrics/route";
import { GET as healthGET } from "@/app/api/v1/stores/[store]/health/route";
import { flushLatencyRollups } from "@/lib/metrics/rollups";
import { snapshotAllStores } from "@/lib/metrics/snapshots";
import { governance } from "@/lib/backend/governance";
import { onPg, seedDocument, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";

async function scrape(opts: { token?: string; forwardedFor?: string } = {}): Promise<{ status: number; text: string; type: string | null }> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.forwardedFor) headers["x-forwarded-for"] = opts.forwardedFor;
  const res = await metricsGET(new Request("http://127.0.0.1/api/metrics", { headers }));
  return { status: res.status, text: await res.text(), type: res.headers.get("content-type") };
}

/** Stores notes (with a document) and secret, a reader's token and one that reads notes only. */
async function seed() {
  await seedStore("notes");
  await seedStore("secret");
  const readToken = await seedToken({ label: "r", agent_id: "prom", scopes: ["read"] });
  const notesOnly = await seedToken({ label: "n", agent_id: "notes-agent", scopes: ["read"], stores: ["notes"] });
  await seedDocument("notes", "a.md", "# A\n\nhello vectors");
  return { readToken, notesOnly };
}

describe("GET /api/metrics and GET /stores/{store}/health", () => {
  let env: TestEnv;
  let readToken: string;
  let notesOnly: string;
  beforeEach(async () => {
    const started = await useTestBackend({}, { seed });
    env = started;
    ({ readToken, notesOnly } = started.seeded);
    await snapshotAllStores();
    flushLatencyRollups();
  });
  afterEach(() => env.cleanup());
  const restart = async (extraEnv: Record<string, string>) => {
    await env.cleanup();
    env = await useTestBackend(extraEnv);
  };

  it("a loopback-bound server answers a tokenless local scrape in Prometheus text format when DUALMIND_METRICS_PUBLIC_LOOPBACK allows it", async () => {
    await restart({ DUALMIND_METRICS_PUBLIC_LOOPBACK: "true" });
    await seedStore("notes");
    await seedDocument("notes", "a.md", "# A\n\nhello vectors");
    await snapshotAllStores();
    // An active review in the ledger this process serves (PostgreSQL's with DATABASE_URL, never a local file).
    await governance().createDialecticSession({ input: { topic: "metrics scrape" }, agentId: "reviewer" });
    const r = await scrape();
    expect(r.status).toBe(200);
    expect(r.type).toContain("text/plain");
    expect(r.text).toMatch(/^dualmind_store_embed_backlog\{store="notes"\} [1-9]\d*$/m);
    expect(r.text).toMatch(/^dualmind_store_coverage_ratio\{store="notes"\} 0$/m);
    expect(r.text).toContain("dualmind_dialectic_active_sessions 1");
    // The database's size: governance.db's file on SQLite, the PostgreSQL database's (ledger and stores) with DATABASE_URL.
    expect(r.text).toMatch(onPg ? /^dualmind_db_bytes\{db="postgres",file="database"\} [1-9]\d*/m : /^dualmind_db_bytes\{db="governance",file="governance.db"\} \d+/m);
  });

  it("a scrape forwarded from another host needs a token; a bad token is 401 in the one envelope", async () => {
    const forwarded = await scrape({ forwardedFor: "203.0.113.9" });
    expect(forwarded.status).toBe(401);
    expect(JSON.parse(forwarded.text).error.code).toBe("unauthorized");
    expect((await scrape({ forwardedFor: "203.0.113.9", token: "dm_nope" })).status).toBe(401);
    const ok = await scrape({ forwardedFor: "203.0.113.9", token: readToken });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('dualmind_http_requests_total{route="GET /metrics",code="401"}');
  });

  it("a server bound to all interfaces refuses tokenless scrapes", async () => {
    await restart({ HOST: "0.0.0.0" });
    expect((await scrape()).status).toBe(401);
  });

  it("a token limited to some stores sees only their gauges", async () => {
    const r = await scrape({ token: notesOnly });
    expect(r.text).toContain('store="notes"');
    expect(r.text).not.toContain('store="secret"');
    expect(r.text).not.toContain('db="governance"');
  });

  it("the store health JSON says what is wrong and what fixes it, with recall quality when measured", async () => {
    const res = await healthGET(new Request("http://127.0.0.1/api/v1/stores/notes/health", { headers: { authorization: `Bearer ${readToken}` } }), {
      params: Promise.resolve({ store: "notes" }),
    });
    const body = await res.json();
    expect(res.status).toBe(200);
    expect(body).toMatchObject({ store: "notes", status: "healthy", degraded: false, coverage_pct: 0, recall: { hit_rate: null } });
    expect(body.backlog.pending).toBeGreaterThan(0);
    const forbidden = await healthGET(new Request("http://127.0.0.1/api/v1/stores/secret/health", { headers: { authorization: `Bearer ${notesOnly}` } }), {
      params: Promise.resolve({ store: "secret" }),
    });
    expect(forbidden.status).toBe(403);
  });
});
