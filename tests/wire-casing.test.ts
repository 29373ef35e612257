import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { toWire } from "@/lib/api/contract";
import { chunkDetail, documentListResponse, jobResponse, memoryListResponse, memoryTrashResponse, memoryWithBody, putDocumentsResponse, searchResponse, trashedMemoryWithBody, verifyResponse } from "@/lib/api/responses/documents";
import { reembedEstimate, storeHealthResponse } from "@/lib/api/responses/embeddings";
import { selfRecallResponse } from "@/lib/api/responses/self-recall";
import { storeSummary } from "@/lib/api/responses/stores";
import { getEmbedder } from "@/lib/embed/model";
import { getSelfRecall } from "@/lib/eval/self-recall";
import { memoryFilterSchema } from "@/lib/index/memories";
import { searchInputSchema } from "@/lib/index/search";
import { storeHealthReportFor } from "@/lib/metrics/health";
import { embeddingsBackend } from "@/lib/stores/embeddings-backend";
import { stores } from "@/lib/stores/backend";
import { drainEmbeddings, governanceSql, seedDocument, seedStore, useTestBackend, type TestEnv } from "./backend";

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

  it("a search answer: hits, passages, signals, vectors, fusion and explain (GET/POST /stores/{store}/search)", async () => {
    await seedDocument("docs", "runbooks/backup.md", "# Backups\n\nThe nightly backup copies the database to the vault.\n\n## Restore\n\nA restore reads the vault back into the database.");
    await drainEmbeddings(["docs"]);
    for (const input of [{ q: "backup vault", mode: "hybrid", group: "document", explain: true }, { q: "backup vault", mode: "fts", limit: 1 }]) {
      const result = await stores().search({ store: "docs", input: searchInputSchema.parse(input) });
      expect(result.results.length).toBeGreaterThan(0);
      if (input.mode === "hybrid") expect(result).toMatchObject({ effective_mode: "hybrid", fusion: expect.any(Object), vectors: expect.any(Object), explain: expect.any(Object), results: [{ passages: expect.any(Array), signals: { document: expect.any(Object) } }] });
      asWire(searchResponse, result);
    }
  });

  it("memories and the trash (GET/POST/PUT /stores/{store}/memories, GET /stores/{store}/memories/trash)", async () => {
    const created = await stores().createMemory({ store: "docs", input: { path: "ops/rota", body: "who is on call", tags: ["pager"], expires_at: Date.UTC(2030, 0, 1) }, actor: "test" });
    asWire(memoryWithBody, created);
    asWire(memoryListResponse, await stores().listMemories({ store: "docs", filter: memoryFilterSchema.parse({}) }));
    await stores().deleteMemory({ store: "docs", memoryPath: "ops/rota", actor: "test" });
    const trash = await stores().listMemoryTrash({ store: "docs" });
    asWire(memoryTrashResponse, { retention_days: 30, trash });
    asWire(trashedMemoryWithBody, await stores().getTrashedMemory({ store: "docs", id: trash[0].id }));
  });

  it("documents and chunks (PUT/GET /stores/{store}/documents, GET /stores/{store}/chunks/{id})", async () => {
    asWire(putDocumentsResponse, { documents: await stores().putDocuments({ store: "docs", input: { path: "notes/b.md", content: "# b\n\nmore words" }, actor: "test" }) });
    asWire(documentListResponse, await stores().listDocuments({ store: "docs", prefix: "", limit: 10, offset: 0 }));
    const [hit] = (await stores().search({ store: "docs", input: searchInputSchema.parse({ q: "more words", mode: "fts" }) })).results;
    asWire(chunkDetail, await stores().getChunk({ store: "docs", chunkId: hit.chunk_id }));
  });

  it("verify and the reindex job (GET /stores/{store}/verify, POST /stores/{store}/reindex, GET /jobs/{id})", async () => {
    asWire(verifyResponse, await stores().verifyStore({ store: "docs" }));
    const job = await stores().runReindex({ store: "docs", actor: "test" });
    expect(job.status).toBe("succeeded");
    asWire(jobResponse, { job });
  });

  it("a reindex job recorded in the older camelCase spelling reads as the wire spells it", async () => {
    const id = "33333333-3333-4333-8333-333333333333";
    const counts = { scanned: 2, added: 1, changed: 0, unchanged: 1, removed: 0, skipped: 1 };
    const kind = { scanned: 1, added: 1, changed: 0, unchanged: 0, removed: 0 };
    const old = { store: "docs", counts, byKind: { documents: kind, memories: kind }, skippedBy: { binary: 0, oversized: 0, badName: 1, symlink: 0 }, linksOutsideRoot: ["memory/x.md"], changedPaths: ["a.md"], durationMs: 12 };
    await governanceSql("insert into admin_jobs (id, kind, store, actor, status, owner, attempts, result_json, started_at, heartbeat_at, finished_at) values (?, 'reindex', 'docs', 'test', 'succeeded', 'x', 1, ?, 1, 2, 3)", [id, JSON.stringify(old)]);
    const job = await stores().getJob({ id, stores: null });
    expect(job?.result).toEqual({ store: "docs", counts, by_kind: { documents: kind, memories: kind }, skipped_by: { binary: 0, oversized: 0, bad_name: 1, symlink: 0 }, links_outside_root: ["memory/x.md"], changed_paths: ["a.md"], duration_ms: 12 });
    expect(job).toMatchObject({ started_at: 1, heartbeat_at: 2, finished_at: 3 });
    asWire(jobResponse, { job });
  });
});
