import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bootstrapApp } from "@/lib/bootstrap";
import { setActiveFingerprintId } from "@/lib/embed/model";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { isAppError } from "@/lib/errors";
import { putDocuments, putDocumentsSchema } from "@/lib/index/ingest";
import { createMemory, createMemorySchema } from "@/lib/index/memories";
import { READER_CONTEXT_BYTES, readChunkInDocument } from "@/lib/index/reader";
import { createStore, openStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

type Chunk = { chunkId: string; chunkIndex: number; text: string; startByte: number; endByte: number };

function chunksOf(store: string, docPath: string): Chunk[] {
  return openStore({ store })
    .sqlite.prepare(
      `select c.chunk_id as chunkId, c.chunk_index as chunkIndex, c.text, c.start_byte as startByte, c.end_byte as endByte
       from chunks c join documents d on d.doc_id = c.doc_id where d.path = ? order by c.chunk_index`,
    )
    .all(docPath) as Chunk[];
}

/** A markdown guide of several sections: long enough for several chunks, short enough to be shown whole. */
const GUIDE = Array.from({ length: 6 }, (_, i) => `## Section ${i}\n\n${`Step ${i} of the restore drill: copy the snapshot, verify its hash, then restart. `.repeat(8)}\n`).join("\n");

describe("readChunkInDocument", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(async () => {
    env = useTempDataDir();
    await bootstrapApp();
    createStore({ input: { name: "notes" }, actor: "test" });
  });
  afterEach(() => env.cleanup());

  it("shows the chunk inside its whole document, with the chunks beside it and the document's metadata", () => {
    const handle = openStore({ store: "notes" });
    putDocuments({ handle, input: putDocumentsSchema.parse({ path: "ops/restore.md", content: GUIDE }), actor: "test" });
    const chunks = chunksOf("notes", "ops/restore.md");
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    const middle = chunks[1];

    const r = readChunkInDocument({ handle, chunkId: middle.chunkId });
    expect(r.text.chunk).toBe(middle.text);
    // The document around it is the document itself, cut exactly at the chunk's edges.
    expect(r.text.before + r.text.chunk + r.text.after).toBe(GUIDE);
    expect(Buffer.byteLength(r.text.before)).toBe(middle.startByte);
    expect(r.text).toMatchObject({ omittedBefore: 0, omittedAfter: 0 });
    expect(r.neighbours.prev).toMatchObject({ chunkId: chunks[0].chunkId, chunkIndex: 0 });
    expect(r.neighbours.next).toMatchObject({ chunkId: chunks[2].chunkId, chunkIndex: 2 });
    expect(r.neighbours.next?.preview.startsWith(chunks[2].text.replace(/\s+/g, " ").trim().slice(0, 40))).toBe(true);
    expect(r.document).toMatchObject({ path: "ops/restore.md", kind: "markdown", origin: "api", bytes: Buffer.byteLength(GUIDE), chunks: chunks.length, memory: null });
    expect(r.document.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(r.chunk).toMatchObject({ chunkId: middle.chunkId, chunkIndex: 1, chunkingVersion: 1, stale: false });

    expect(readChunkInDocument({ handle, chunkId: chunks[0].chunkId }).neighbours.prev).toBeNull();
    expect(readChunkInDocument({ handle, chunkId: chunks.at(-1)!.chunkId }).neighbours.next).toBeNull();
  });

  it("rebuilds a memory file's text from its chunks and names its tags", () => {
    const handle = openStore({ store: "notes" });
    createMemory({ handle, input: createMemorySchema.parse({ path: "ops/drills/restore", body: GUIDE, tags: ["ops", "backup"], summary: "how we restore" }), actor: "test" });
    const file = fs.readFileSync(path.join(env.dataDir, "stores", "notes", "memory", "ops", "drills", "restore.md"), "utf8");
    const chunks = chunksOf("notes", "memory/ops/drills/restore.md");
    const last = chunks.at(-1)!;

    const r = readChunkInDocument({ handle, chunkId: last.chunkId });
    // File documents keep no copy of their text: the chunks rebuild it (frontmatter included), byte for byte here.
    expect(r.text.before + r.text.chunk + r.text.after).toBe(file);
    expect(r.document).toMatchObject({ kind: "memory", origin: "file", memory: { path: "ops/drills/restore", tags: ["ops", "backup"], summary: "how we restore" } });
  });

  it("shows a bounded window of a large document and says how much it left out", () => {
    const handle = openStore({ store: "notes" });
    // ~300 KB of code in many chunks; the reader must not hand the whole of it to a page.
    const code = Array.from({ length: 6000 }, (_, i) => `export const value${i} = ${i}; // line ${i} with ünïcode\n`).join("");
    putDocuments({ handle, input: putDocumentsSchema.parse({ path: "src/values.ts", content: code }), actor: "test" });
    const chunks = chunksOf("notes", "src/values.ts");
    const middle = chunks[Math.floor(chunks.length / 2)];

    const r = readChunkInDocument({ handle, chunkId: middle.chunkId });
    expect(r.text.chunk).toBe(middle.text);
    expect(r.text.omittedBefore).toBeGreaterThan(0);
    expect(r.text.omittedAfter).toBeGreaterThan(0);
    expect(Buffer.byteLength(r.text.before)).toBeLessThanOrEqual(READER_CONTEXT_BYTES);
    expect(Buffer.byteLength(r.text.after)).toBeLessThanOrEqual(READER_CONTEXT_BYTES);
    // What is shown is the document's own bytes, cut at line starts (no broken characters).
    const shown = Buffer.from(code).subarray(r.text.omittedBefore, Buffer.byteLength(code) - r.text.omittedAfter).toString("utf8");
    expect(r.text.before + r.text.chunk + r.text.after).toBe(shown);
    expect(r.text.before.startsWith("export const value")).toBe(true);
    expect(r.text.before).not.toContain("\uFFFD");
  });

  it("tells pending, embedded (with ledger provenance) and drifted vectors apart", async () => {
    const handle = openStore({ store: "notes" });
    putDocuments({ handle, input: putDocumentsSchema.parse({ path: "ops/restore.md", content: GUIDE }), actor: "test" });
    const chunk = chunksOf("notes", "ops/restore.md")[0];

    const before = readChunkInDocument({ handle, chunkId: chunk.chunkId }).vector;
    expect(before.state).toBe("pending");
    expect(before.vectors).toEqual([]);
    expect(before.provenance).toEqual([]);
    expect(before.explanation).toMatch(/only full-text search finds this chunk/);

    await drainEmbedQueues({ stores: ["notes"] });
    const after = readChunkInDocument({ handle, chunkId: chunk.chunkId }).vector;
    expect(after.state).toBe("embedded");
    expect(after.queue).toBeNull();
    expect(after.servingModel?.provider).toBe("builtin");
    const sha = readChunkInDocument({ handle, chunkId: chunk.chunkId }).chunk.chunkSha256;
    expect(after.vectors).toHaveLength(1);
    expect(after.vectors[0]).toMatchObject({ serving: true, matchesText: true, inputHash: sha, fingerprintId: after.servingModel?.id });
    // The ledger's record: which model made it from which input, and who wrote it.
    expect(after.provenance).toHaveLength(1);
    expect(after.provenance[0]).toMatchObject({ inputHash: sha, fingerprint: after.servingModel?.id, chunkingVersion: "1", recordedBy: "system:embed-worker" });
    expect(after.provenance[0].modelName).toMatch(/^builtin:/);
    expect(after.provenance[0].createdAt).toBeGreaterThan(0);

    // A re-embed switched the store to another model: this chunk's vector no longer serves.
    setActiveFingerprintId({ handle, fingerprintId: "another-model" });
    const drifted = readChunkInDocument({ handle, chunkId: chunk.chunkId }).vector;
    expect(drifted.state).toBe("other_model");
    expect(drifted.explanation).toMatch(/^Drifted/);
    expect(drifted.vectors[0].serving).toBe(false);
  });

  it("answers not_found for a chunk id the store does not hold", () => {
    const handle = openStore({ store: "notes" });
    let error: unknown;
    try {
      readChunkInDocument({ handle, chunkId: "0".repeat(32) });
    } catch (e) {
      error = e;
    }
    expect(isAppError(error) && error.code).toBe("not_found");
  });
});
