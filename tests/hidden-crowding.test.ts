import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as thoughtsRoute from "@/app/api/v1/stores/[store]/thoughts/route";
import * as rememberRoute from "@/app/api/v1/stores/[store]/remember/route";
import * as policyRoute from "@/app/api/v1/stores/[store]/policy/write/route";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { callRoute } from "./helpers";
import { drainEmbeddings, seedStore, seedToken, useTestBackend, type TestEnv } from "./backend";

/**
 * Items a reader cannot see (an untrusted agent's proposals under review) do not take the places of items it can:
 * remember's full-text and vector legs read past the hidden ones, so a flood of proposals that match a question
 * better than the one real answer does not push that answer out of the candidates, for any reader.
 */
let env: TestEnv;
let trusted: string;
let scribe: string;
let reader: string;
const P = { store: "kb" };

beforeEach(async () => {
  env = await useTestBackend();
  resetEmbedderForTests();
  await seedStore("kb");
  const admin = await seedToken({ label: "admin", agent_id: "boss", scopes: ["read", "write", "admin"] });
  trusted = await seedToken({ label: "w", agent_id: "curator", scopes: ["write"] });
  scribe = await seedToken({ label: "scribe", agent_id: "scribe", scopes: ["read", "write"] });
  reader = await seedToken({ label: "r", agent_id: "reader", scopes: ["read"] });
  const policy = await callRoute(policyRoute.PUT, { method: "PUT", token: admin, params: P, body: { modes: { thought: "review" }, trusted: ["curator"] } });
  expect(policy.status, JSON.stringify(policy.json)).toBe(200);
});
afterEach(async () => {
  await env.cleanup();
  resetEmbedderForTests();
});

const ids = async (query: string, extra: Record<string, unknown> = {}) => {
  const r = await callRoute(rememberRoute.POST, { token: reader, params: P, body: { query, kinds: ["thought"], ...extra } });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return (r.json.results as { id: string; item_status?: string }[]).map((x) => x.id);
};

describe("hidden items do not crowd remember's candidates", () => {
  it("the real answer stays in remember's results past more proposals than its candidates, each matching the question better", async () => {
    const real = await callRoute(thoughtsRoute.POST, { token: trusted, params: P, body: { content: "The harbour ferry timetable changed: boats leave at nine now.", timestamp: Date.now() - 400 * 86_400_000 } });
    expect(real.status, JSON.stringify(real.json)).toBe(201);
    const realId = real.json.thought.id as string;
    const candidates = 10;
    const flood: string[] = [];
    for (let i = 0; i < candidates + 5; i++) {
      const r = await callRoute(thoughtsRoute.POST, { token: scribe, params: P, body: { content: `harbour ferry timetable harbour ferry timetable notice ${i}` } });
      expect(r.json.proposal?.status, JSON.stringify(r.json)).toBe("proposed");
      flood.push(r.json.thought.id);
    }
    // Before any vector exists remember answers from the full-text leg alone; then from both legs.
    for (const stage of ["full-text", "full-text and vectors"]) {
      if (stage !== "full-text") await drainEmbeddings(["kb"]);
      const got = await ids("harbour ferry timetable", { candidates });
      expect(got, stage).toContain(realId);
      for (const id of flood) expect(got, stage).not.toContain(id);
    }
    // A reader who asks for proposals sees them, marked, and the real answer still.
    const withProposed = await ids("harbour ferry timetable", { candidates: 40, include_proposed: true, limit: 50 });
    expect(withProposed).toEqual(expect.arrayContaining([realId, ...flood]));
  });
});
