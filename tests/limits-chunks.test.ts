import { afterEach, describe, expect, it } from "vitest";
import { putDocumentsSchema } from "@/lib/index/ingest";
import { stores } from "@/lib/stores/backend";
import { chunksOfDocument, seedStore, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;
afterEach(async () => env?.cleanup());
const store = "docs";
const put = (path: string, content: string) => stores().putDocuments({ store, input: putDocumentsSchema.parse({ path, content }), actor: "agent:a" });

describe("chunks per document", () => {
  it("a document of very short lines that would split into thousands of chunks is refused with 422 naming DUALMIND_MAX_CHUNKS_PER_DOCUMENT, and nothing is written", async () => {
    env = await useTestBackend();
    await seedStore(store);
    // 660 KB of two-byte lines: sixty-line windows made ~6,300 chunks of ~100 bytes.
    await expect(put("amp/x.txt", "a\n".repeat(330_000))).rejects.toMatchObject({ status: 422, message: expect.stringContaining("DUALMIND_MAX_CHUNKS_PER_DOCUMENT") });
    expect((await stores().listDocuments({ store, prefix: "amp/", limit: 10, offset: 0 })).total).toBe(0);
    // A document of the same size in ordinary lines is taken, in a bounded number of chunks.
    const prose = Array.from({ length: 9_000 }, (_, i) => `line ${i} of an ordinary text file with words in it`).join("\n");
    await expect(put("amp/prose.txt", prose)).resolves.toMatchObject([{ status: "added" }]);
    const chunks = await chunksOfDocument(store, "amp/prose.txt");
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.length).toBeLessThanOrEqual(1000);
  });

  it("the limit is the operator's: a lower DUALMIND_MAX_CHUNKS_PER_DOCUMENT refuses a batch whose one document passes it, writing none of the batch", async () => {
    env = await useTestBackend({ DUALMIND_MAX_CHUNKS_PER_DOCUMENT: "3" });
    await seedStore(store);
    const long = Array.from({ length: 400 }, (_, i) => `row ${i}`).join("\n");
    await expect(stores().putDocuments({ store, input: putDocumentsSchema.parse({ documents: [{ path: "b/ok.txt", content: "short\n" }, { path: "b/long.txt", content: long }] }), actor: "agent:a" })).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining("b/long.txt"),
    });
    expect((await stores().listDocuments({ store, prefix: "b/", limit: 10, offset: 0 })).total).toBe(0);
  });

  it("documents each within their limit but many together are refused with 422 naming DUALMIND_MAX_CHUNKS_PER_REQUEST, writing none; the same documents in smaller requests are taken", async () => {
    env = await useTestBackend();
    await seedStore(store);
    // Six documents of ~980 chunks each (under the per-document limit): ~5,900 chunks in one transaction before.
    const shortLines = "a\n".repeat(51_000);
    const documents = Array.from({ length: 6 }, (_, i) => ({ path: `many/${i}.txt`, content: shortLines }));
    await expect(stores().putDocuments({ store, input: putDocumentsSchema.parse({ documents }), actor: "agent:a" })).rejects.toMatchObject({ status: 422, message: expect.stringContaining("DUALMIND_MAX_CHUNKS_PER_REQUEST") });
    expect((await stores().listDocuments({ store, prefix: "many/", limit: 10, offset: 0 })).total).toBe(0);
    for (const pair of [documents.slice(0, 2), documents.slice(2, 4)]) await expect(stores().putDocuments({ store, input: putDocumentsSchema.parse({ documents: pair }), actor: "agent:a" })).resolves.toHaveLength(2);
    expect((await stores().listDocuments({ store, prefix: "many/", limit: 10, offset: 0 })).total).toBe(4);
  });
});
