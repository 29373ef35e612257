import fs from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import * as healthRoute from "@/app/api/v1/health/route";
import { closePg } from "@/lib/db/pg";
import { callRoute, useTempDataDir } from "../helpers";
import { createTestDatabase } from "./helpers";

/**
 * GET /health is what a load balancer asks: with DATABASE_URL it must answer
 * for the database the replica serves from — PostgreSQL — not for a local
 * governance.db the replica no longer uses.
 */
it("with DATABASE_URL, /health answers 200 when PostgreSQL answers and never opens a local governance.db", async () => {
  const env = useTempDataDir({ DATABASE_URL: await createTestDatabase() });
  try {
    const r = await callRoute(healthRoute.GET, {});
    expect(r).toMatchObject({ status: 200, json: { ok: true } });
    expect(fs.existsSync(path.join(env.dataDir, "governance.db"))).toBe(false);
  } finally {
    await closePg();
    env.cleanup();
  }
});

it("with DATABASE_URL pointing at a server that is not there, /health answers 503 unavailable, not 200 from a local file", async () => {
  // Nothing listens on port 9 (discard) here: the connection is refused at once.
  const env = useTempDataDir({ DATABASE_URL: "postgres://dualmind@127.0.0.1:9/nowhere" });
  try {
    const r = await callRoute(healthRoute.GET, {});
    expect(r.status).toBe(503);
    expect(r.json.error).toMatchObject({ code: "unavailable" });
    expect(fs.existsSync(path.join(env.dataDir, "governance.db"))).toBe(false);
  } finally {
    await closePg();
    env.cleanup();
  }
});
