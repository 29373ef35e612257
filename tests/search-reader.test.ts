import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setActiveFingerprintId } from "@/lib/embed/model";
import { isAppError } from "@/lib/errors";
import { createMemorySchema } from "@/lib/index/memories";
import { READER_CONTEXT_BYTES } from "@/lib/index/reader";
import { stores } from "@/lib/stores/backend";
import { openStore } from "@/lib/stores/stores";
import { chunksOfDocument, drainEmbeddings, onPg, seedDocument, seedStore, sqliteOnlyCheck, useTestBackend, type TestEnv } from "./backend";
import { restartWith } from "./helpers";

// The search reader (stores().readChunk: GET /stores/{store}/chunks/{id}/reader and the dashboard's reader page) on both backends.
const read = (chunkId: string) => stores().readChunk({ store: "notes", chunkId });

/** A markdown guide of several sections: long enough for several chunks, short enough to be shown whole. */
const GUIDE = Array.from({ length: 6 }, (_, i) => `## Section ${i}\n\n${`Step ${i} of the restore drill: copy the snapshot, verify its hash, then restart. `.repeat(8)}\n`).join("\n");

describe("the search reader (a chunk in its document)", () => {
  let env: TestEnv;
  const seed = () => seedStore("notes");
  beforeEach(async () => {
    env = await useTestBackend({}, { seed });
  });
  afterEach(async () => {
    restartWith({ DUALMIND_EMBED_MODEL: undefined, DUALMIND_EMBED_DIM: undefined });
    await env.cleanup();
  });

  it("shows the chunk inside its whole document, with the chunks beside it and the document's metadata", async () => {
    await seedDocument("notes", "ops/restore.md", GUIDE);
    const chunks = await chunksOfDocument("notes", "ops/restore.md");
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    const middle = chunks[1];

    const r = await read(middle.chunkId);
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

    expect((await read(chunks[0].chunkId)).neighbours.prev).toBeNull();
    expect((await read(chunks.at(-1)!.chunkId)).neighbours.next).toBeNull();
  });

  it("after an edit that lengthens the first section, the unchanged chunks after it are still shown at their own place", async () => {
    await seedDocument("notes", "ops/restore.md", GUIDE);
    const before = await chunksOfDocument("notes", "ops/restore.md");
    const edited = GUIDE.replace("## Section 0\n\n", "## Section 0\n\nA new first paragraph: check the runbook's owner before starting.\n\n");
    await seedDocument("notes", "ops/restore.md", edited);
    const after = await chunksOfDocument("notes", "ops/restore.md");
    // The later chunks' text is unchanged, so they are kept (same ids): their byte ranges must move with them.
    const last = after.at(-1)!;
    expect(before.map((c) => c.chunkId)).toContain(last.chunkId);
    for (const c of after) expect(Buffer.from(edited).subarray(c.startByte, c.endByte).toString("utf8")).toBe(c.text);
    const r = await read(last.chunkId);
    expect(r.text.before + r.text.chunk + r.text.after).toBe(edited);
    expect(Buffer.byteLength(r.text.before)).toBe(last.startByte);
  });

  it("rebuilds a memory's text from its chunks and names its tags", async () => {
    await stores().createMemory({ store: "notes", input: createMemorySchema.parse({ path: "ops/drills/restore", body: GUIDE, tags: ["ops", "backup"], summary: "how we restore" }), actor: "test" });
    const chunks = await chunksOfDocument("notes", "memory/ops/drills/restore.md");
    const last = chunks.at(-1)!;

    const r = await read(last.chunkId);
    const shown = r.text.before + r.text.chunk + r.text.after;
    // The memory's document keeps no copy of its text: the chunks rebuild its whole body; the frontmatter is metadata, not shown as text.
    expect(shown).toBe(GUIDE);
    expect(r.document).toMatchObject({ kind: "memory", memory: { path: "ops/drills/restore", tags: ["ops", "backup"], summary: "how we restore" } });
    await sqliteOnlyCheck("the memory file in the store's memory/ folder (PostgreSQL keeps memories in a table)", () => {
      const file = fs.readFileSync(path.join(env.dataDir, "stores", "notes", "memory", "ops", "drills", "restore.md"), "utf8");
      // Byte for byte the file's body.
      expect(file.startsWith("---\n")).toBe(true);
      expect(file.endsWith(shown)).toBe(true);
      expect(r.document.origin).toBe("file");
    });
  });

  it("shows a bounded window of a large document and says how much it left out", async () => {
    // ~300 KB of code in many chunks; the reader must not hand the whole of it to a page.
    const code = Array.from({ length: 6000 }, (_, i) => `export const value${i} = ${i}; // line ${i} with ünïcode\n`).join("");
    await seedDocument("notes", "src/values.ts", code);
    const chunks = await chunksOfDocument("notes", "src/values.ts");
    const middle = chunks[Math.floor(chunks.length / 2)];

    const r = await read(middle.chunkId);
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
    await seedDocument("notes", "ops/restore.md", GUIDE);
    const chunk = (await chunksOfDocument("notes", "ops/restore.md"))[0];

    const before = (await read(chunk.chunkId)).vector;
    expect(before.state).toBe("pending");
    expect(before.vectors).toEqual([]);
    expect(before.provenance).toEqual([]);
    expect(before.explanation).toMatch(/only full-text search finds this chunk/);

    await drainEmbeddings(["notes"]);
    const after = (await read(chunk.chunkId)).vector;
    expect(after.state).toBe("embedded");
    expect(after.queue).toBeNull();
    expect(after.servingModel?.provider).toBe("builtin");
    const sha = (await read(chunk.chunkId)).chunk.chunkSha256;
    expect(after.vectors).toHaveLength(1);
    expect(after.vectors[0]).toMatchObject({ serving: true, matchesText: true, inputHash: sha, fingerprintId: after.servingModel?.id });
    // The ledger's record: which model made it from which input, and who wrote it.
    expect(after.provenance).toHaveLength(1);
    expect(after.provenance[0]).toMatchObject({ inputHash: sha, fingerprint: after.servingModel?.id, chunkingVersion: "1", recordedBy: "system:embed-worker" });
    expect(after.provenance[0].modelName).toMatch(/^builtin:/);
    expect(after.provenance[0].createdAt).toBeGreaterThan(0);

    // Another model now serves the store: this chunk's vector no longer does. On SQLite the store's active model is
    // its own meta (a re-embed's switch sets it); on PostgreSQL the serving model is the configured one.
    if (onPg) restartWith({ DUALMIND_EMBED_DIM: "256", DUALMIND_EMBED_MODEL: "hash-256" });
    else setActiveFingerprintId({ handle: openStore({ store: "notes" }), fingerprintId: "another-model" });
    const drifted = (await read(chunk.chunkId)).vector;
    expect(drifted.state).toBe("other_model");
    expect(drifted.explanation).toMatch(/^Drifted/);
    expect(drifted.vectors[0].serving).toBe(false);
  });

  it("answers not_found for a chunk id the store does not hold", async () => {
    const error = await read("0".repeat(32)).catch((e: unknown) => e);
    expect(isAppError(error) && error.code).toBe("not_found");
  });
});
