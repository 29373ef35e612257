import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { POST as provenance } from "@/app/api/v1/provenance/route";
import { PUT as putDocuments } from "@/app/api/v1/stores/[store]/documents/route";
import { resetConfigForTests } from "@/lib/config";
import { governanceSql, ledgerOnDisk, onPg, seedToken, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

vi.mock("server-only", () => ({}));

/**
 * DUALMIND_GOVERNANCE_MAX_BYTES holds between two measures of the ledger's
 * size (on PostgreSQL it is measured at most once a second; SECURITY.md,
 * "Limits"): with the clock stopped right after a measure, so no new measure
 * comes, a burst of writes still stops within one write of the limit, and an
 * agent's store write is refused the moment its ledger writes are.
 */
let env: TestEnv;
const HASH = "a".repeat(64);
/** The room the ledger is given past what it holds: a few of the burst's writes. */
const ROOM = 256 * 1024;
/** What a size measure rounds to past the rows (PostgreSQL's free-space and visibility maps; tests/limits-ledger-share-disk.test.ts). */
const SLACK = 65_536;

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_GOVERNANCE_MAX_BYTES_PER_AGENT: String(1024 * 1024 * 1024) });
});
afterAll(async () => env?.cleanup());
afterEach(() => {
  vi.useRealTimers();
  delete process.env.DUALMIND_GOVERNANCE_MAX_BYTES;
  resetConfigForTests();
});

const counted = async (agentId: string) => Number((await governanceSql<{ bytes: unknown }>("select bytes from agent_ledger_usage where agent_id = ?", [agentId]))[0]?.bytes ?? 0);
const limitOf = (json: { error?: { details?: { limit?: string }[] } }) => json.error?.details?.[0]?.limit;

/** The ledger's limit `ROOM` past what it holds now (at least the variable's own minimum). */
async function limitJustAbove(): Promise<number> {
  const max = Math.max(1024 * 1024, (await ledgerOnDisk()) + ROOM);
  process.env.DUALMIND_GOVERNANCE_MAX_BYTES = String(max);
  resetConfigForTests();
  return max;
}

describe("DUALMIND_GOVERNANCE_MAX_BYTES between two measures of the ledger", () => {
  it("a burst of ledger writes right after a measure stops within one write of the limit, and the agent's store writes stop with it", async () => {
    const agentId = "burst-agent";
    const token = await seedToken({ label: "b", agent_id: agentId, scopes: ["write"] });
    const storeWrite = (name: string) => callRoute(putDocuments, { token, params: { store: "default" }, body: { documents: [{ path: `burst/${name}.md`, content: `# ${name}` }] } });
    const max = await limitJustAbove();
    // The clock stops: every check from here on reads the ledger within one second of the last measure.
    vi.useFakeTimers({ toFake: ["Date"] });
    // A store write measures the ledger for the audit rows' check while there is room.
    expect((await storeWrite("before")).status).toBe(200);
    let last = { status: 0, json: {} as Record<string, unknown> };
    let largest = 0;
    let writes = 0;
    for (; writes < 60 && last.status !== 507; writes++) {
      const before = await counted(agentId);
      last = await callRoute(provenance, { token, body: { records: Array.from({ length: 50 }, (_, j) => ({ artifact_type: "doc", artifact_id: `b${writes}-${j}-${"p".repeat(200)}`, store: "default", input_hash: HASH })) } });
      expect([200, 507]).toContain(last.status);
      largest = Math.max(largest, (await counted(agentId)) - before);
    }
    const grownPast = (await ledgerOnDisk()) - max;
    console.log(`[ledger burst] ${onPg ? "pg" : "sqlite"}: ${writes} writes, refused ${last.status}, ledger ${grownPast} bytes past the limit, largest write counted ${largest}`);
    expect(last.status).toBe(507);
    expect(limitOf(last.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES");
    // It took several writes to fill the room, and the last one let in passed the limit by at most itself.
    expect(writes).toBeGreaterThan(2);
    expect(await ledgerOnDisk()).toBeLessThanOrEqual(max + largest + SLACK);
    // The agent's store write is refused at once: its audit row's check reads the same measure of the ledger.
    const refused = await storeWrite("after");
    expect(refused.status).toBe(507);
    expect(limitOf(refused.json)).toBe("DUALMIND_GOVERNANCE_MAX_BYTES");
  });
});
