import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { toWire } from "@/lib/api/contract";
import { reembedEstimate, storeHealthResponse } from "@/lib/api/responses/embeddings";
import { selfRecallResponse } from "@/lib/api/responses/self-recall";
import { storeSummary } from "@/lib/api/responses/stores";
import { getEmbedder } from "@/lib/embed/model";
import { getSelfRecall } from "@/lib/eval/self-recall";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { stores } from "@/lib/stores/backend";
import { seedDocument, seedStore, useTestBackend, type TestEnv } from "./backend";

/**
 * The domain answers these routes return are already in the wire's snake_case: the response mapping
 * (lib/api/contract.ts toWire) passes them through key for key, so what a page, the CLI's --json and the
 * API show of them is spelled one way.
 */
const asWire = (schema: ZodType, value: unknown) => expect(toWire({ schema, value, opts: { undeclared: "keep" } })).toEqual(value);

let env: TestEnv;
beforeAll(async () => {
  env = await useTestBackend();
  await seedStore("docs");
  await seedDocument("docs", "a.md", "# a\n\nsome words");
});
afterAll(async () => {
  await env.cleanup();
});

describe("answers spelled as the wire spells them", () => {
  it("a store's summary (GET /stores/{store})", async () => {
    asWire(storeSummary, await stores().describeStore({ store: "docs" }));
  });

  it("a re-embed's estimate (POST /stores/{store}/reembed dry_run) and the health report's backlog and drift", async () => {
    const configured = await getEmbedder().fingerprint;
    asWire(reembedEstimate, await embeddingsBackend().estimateReembed({ store: "docs", configured, onlyStale: false }));
    const report = await storeHealthReportFor({ store: "docs", principal: "operator" });
    asWire(storeHealthResponse.shape.backlog, report.backlog);
    asWire(storeHealthResponse.shape.parked, report.parked);
    expect(report.drift).not.toBeNull();
    asWire(storeHealthResponse.shape.drift, report.drift);
  });

  it("the self-recall report before the first run: its schedule (GET /stores/{store}/evaluate)", async () => {
    asWire(selfRecallResponse, await getSelfRecall({ store: "docs" }));
  });
});
