import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb, storeIndexPath } from "@/lib/db/connection";
import { chunkDocument, CHUNKING_VERSION } from "@/lib/index/chunking";
import { parseFrontmatter, stringifyFrontmatter } from "@/lib/index/frontmatter";
import { ingestDocument } from "@/lib/index/ingest";
import { ensureIndexBuilt, reindexStore, reindexStoreAsync } from "@/lib/index/reindex";
import { getMemoryByPath, updateMemory, updateMemorySchema } from "@/lib/index/memories";
import { searchInputSchema, searchStore } from "@/lib/index/search";
import { verifyStore } from "@/lib/index/verify";
import { closeAllDatabases } from "@/lib/db/connection";
import { createMemorySchema } from "@/lib/index/memories";
import { stores } from "@/lib/stores/backend";
import { createStore } from "@/lib/stores/stores";
import { governanceSql, itSqliteOnly, searchHere, seedDocument, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";
import { useTempDataDir } from "./helpers";

// Chunking and frontmatter are pure (no database). Reindex and verify scan
// memory files and source roots on disk, SQLite's truth; on PostgreSQL the
// memories table is the truth and there are no files, so those run on SQLite
// only, and the last describe checks what both backends share through
// stores(): a reindex keeps API documents and memories, and verify agrees.
const FILES = "memory files and source roots on disk, and index.db (PostgreSQL's truth is its memories table)";

function writeTree(root: string, files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
  }
}

const LONG_MD = [
  "\uFEFF# Title with BOM",
  "",
  "Intro paragraph with ünïcödé, emoji 🧠 and CRLF line\r",
  ...Array.from({ length: 40 }, (_, i) => `## Section ${i}\n\n${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(6 + (i % 5))}\n\n\`\`\`\n# not a heading inside a fence\n\`\`\`\n`),
  "x".repeat(7000),
].join("\n");

describe("chunking", () => {
  it("slices of the original bytes equal the chunk text, for markdown, code and long lines", () => {
    const code = Array.from({ length: 300 }, (_, i) => `const v${i} = "${"é".repeat(i % 13)}"; // line ${i}`).join("\n");
    for (const [kind, text] of [["markdown", LONG_MD], ["code", code], ["text", "a\n".repeat(10) + "ß".repeat(5000)]] as const) {
      const bytes = Buffer.from(text, "utf8");
      const chunks = chunkDocument({ path: `doc.${kind}`, kind, text });
      expect(chunks.length).toBeGreaterThan(1);
      for (const c of chunks) {
        expect(bytes.subarray(c.startByte, c.endByte).toString("utf8")).toBe(c.text);
        expect(c.endByte - c.startByte).toBeLessThanOrEqual(3000);
      }
      // The whole file is covered, start to end.
      expect(chunks[0].startByte).toBe(0);
      expect(chunks.at(-1)!.endByte).toBe(bytes.length);
    }
  });

  it("markdown chunks start at headings, and fenced '#' lines are not headings", () => {
    const chunks = chunkDocument({ path: "a.md", kind: "markdown", text: LONG_MD });
    expect(chunks.slice(1, -1).filter((c) => c.text.startsWith("## Section")).length).toBeGreaterThan(5);
    const fenced = "# A\n\n" + "word ".repeat(80) + "\n```\n# fake heading in a fence\n```\ntail\n";
    expect(chunkDocument({ path: "f.md", kind: "markdown", text: fenced })).toHaveLength(1);
    const real = fenced.replace("```\n# fake heading in a fence\n```", "# real heading");
    expect(chunkDocument({ path: "f.md", kind: "markdown", text: real }).map((c) => c.text.split("\n")[0])).toEqual(["# A", "# real heading"]);
  });

  it("is deterministic: same input, same ids and hashes; a path change changes ids", () => {
    const a = chunkDocument({ path: "n/a.md", kind: "markdown", text: LONG_MD });
    const b = chunkDocument({ path: "n/a.md", kind: "markdown", text: LONG_MD });
    expect(b).toEqual(a);
    const c = chunkDocument({ path: "n/b.md", kind: "markdown", text: LONG_MD });
    expect(c.map((x) => x.chunkSha256)).toEqual(a.map((x) => x.chunkSha256));
    expect(c[0].chunkId).not.toBe(a[0].chunkId);
  });
});

describe("frontmatter", () => {
  it("round-trips our fields and reads plain YAML written by hand", () => {
    const text = stringifyFrontmatter({ data: { tags: ["a", 'we"ird, tag'], summary: "s: colon", created_at: "2026-01-01T00:00:00.000Z" }, body: "# Body\n" });
    const parsed = parseFrontmatter(text);
    expect(parsed.data).toEqual({ tags: ["a", 'we"ird, tag'], summary: "s: colon", created_at: "2026-01-01T00:00:00.000Z" });
    expect(parsed.body).toBe("# Body\n");
    const hand = parseFrontmatter("---\ntags:\n  - x\n  - 'y z'\nsource: notes\n---\nhello");
    expect(hand.data).toEqual({ tags: ["x", "y z"], source: "notes" });
    expect(hand.body).toBe("hello");
  });
});

describe("reindex and verify", () => {
  let env: ReturnType<typeof useTempDataDir>;
  let src: string;
  beforeEach(() => {
    env = useTempDataDir();
    src = path.join(env.dataDir, "src-root");
    fs.mkdirSync(src);
    process.env.DUALMIND_SOURCE_ROOTS = `notes=${src}`;
    process.env.DUALMIND_SOURCE_EXCLUDE = "**/skip/**";
    process.env.DUALMIND_MAX_FILE_BYTES = "4096";
    createStore({ input: { name: "notes" }, actor: "test" });
  });
  afterEach(() => {
    delete process.env.DUALMIND_SOURCE_ROOTS;
    delete process.env.DUALMIND_SOURCE_EXCLUDE;
    delete process.env.DUALMIND_MAX_FILE_BYTES;
    env.cleanup();
  });

  const memoryRoot = () => path.join(env.dataDir, "stores", "notes", "memory");

  function seed() {
    writeTree(memoryRoot(), {
      "projects/dualmind/setup.md": "---\ntags: [setup]\n---\n# Setup\n\nRun npm ci.\n",
      "people/ana.md": "# Ana\n\nLikes sqlite.\n",
    });
    writeTree(src, {
      "guide.md": LONG_MD.slice(0, 3000),
      "lib/main.ts": "export const x = 1;\n",
      "skip/ignored.md": "# ignored by the exclude glob\n",
      "image.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 1, 2, 3]),
      "huge.txt": "z".repeat(5000),
      ".hidden.md": "# hidden\n",
    });
  }

  function snapshot() {
    const { sqlite } = getStoreDb({ store: "notes" });
    return sqlite.prepare("select c.id, c.chunk_id, c.chunk_sha256, d.path from chunks c join documents d using (doc_id) order by d.path, c.chunk_index").all();
  }

  itSqliteOnly("indexes memories and source roots, skipping binary, oversized, hidden and excluded files", FILES, () => {
    seed();
    const r = reindexStore({ handle: getStoreDb({ store: "notes" }) });
    expect(r.counts).toMatchObject({ scanned: 5, added: 4, changed: 0, removed: 0, skipped: 2 });
    expect(r.skipped_by).toMatchObject({ binary: 1, oversized: 1 });
    const { sqlite } = getStoreDb({ store: "notes" });
    const paths = (sqlite.prepare("select path, kind from documents order by path").all() as { path: string; kind: string }[]).map((d) => `${d.kind}:${d.path}`);
    expect(paths).toEqual(["memory:memory/people/ana.md", "memory:memory/projects/dualmind/setup.md", "markdown:source/src-root/guide.md", "code:source/src-root/lib/main.ts"]);
    expect(verifyStore({ handle: getStoreDb({ store: "notes" }) }).ok).toBe(true);
  });

  itSqliteOnly("same tree twice gives identical chunk ids and hashes, and the second run writes nothing", FILES, () => {
    seed();
    reindexStore({ handle: getStoreDb({ store: "notes" }) });
    const first = snapshot();
    const { sqlite } = getStoreDb({ store: "notes" });
    const changesBefore = (sqlite.prepare("select total_changes() as n").get() as { n: number }).n;
    const again = reindexStore({ handle: getStoreDb({ store: "notes" }) });
    expect(again.counts).toMatchObject({ added: 0, changed: 0, removed: 0, unchanged: 4 });
    expect((sqlite.prepare("select total_changes() as n").get() as { n: number }).n).toBe(changesBefore);
    expect(snapshot()).toEqual(first);

    // A fresh index of the same tree (another machine) has the same chunk ids and hashes.
    closeAllDatabases();
    fs.rmSync(storeIndexPath("notes"));
    fs.rmSync(storeIndexPath("notes") + "-wal", { force: true });
    fs.rmSync(storeIndexPath("notes") + "-shm", { force: true });
    reindexStore({ handle: getStoreDb({ store: "notes" }) });
    const strip = (rows: unknown[]) => (rows as { chunk_id: string; chunk_sha256: string; path: string }[]).map(({ chunk_id, chunk_sha256, path }) => ({ chunk_id, chunk_sha256, path }));
    expect(strip(snapshot())).toEqual(strip(first));
  });

  itSqliteOnly("a changed file is re-chunked keeping unchanged chunk rowids; a deleted file disappears", FILES, () => {
    seed();
    reindexStore({ handle: getStoreDb({ store: "notes" }) });
    const before = snapshot() as { id: number; chunk_id: string; path: string }[];
    fs.appendFileSync(path.join(src, "guide.md"), "\n## Appendix\n\nnew words here\n");
    fs.rmSync(path.join(memoryRoot(), "people", "ana.md"));
    const r = reindexStore({ handle: getStoreDb({ store: "notes" }) });
    expect(r.counts).toMatchObject({ changed: 1, removed: 1, unchanged: 2 });
    const after = snapshot() as { id: number; chunk_id: string; path: string }[];
    expect(after.some((c) => c.path === "memory/people/ana.md")).toBe(false);
    const { sqlite } = getStoreDb({ store: "notes" });
    expect(sqlite.prepare("select count(*) as n from memories where path = 'people/ana'").get()).toEqual({ n: 0 });
    expect(sqlite.prepare("select count(*) as n from categories where path = 'people'").get()).toEqual({ n: 0 });
    const guideBefore = before.filter((c) => c.path.endsWith("guide.md"));
    const firstAfter = after.find((c) => c.chunk_id === guideBefore[0].chunk_id);
    expect(firstAfter?.id).toBe(guideBefore[0].id);
    expect(verifyStore({ handle: getStoreDb({ store: "notes" }) }).ok).toBe(true);
  });

  itSqliteOnly("verify reports hash mismatches, rows for missing files, unindexed files and old chunking versions without writing", FILES, () => {
    seed();
    reindexStore({ handle: getStoreDb({ store: "notes" }) });
    fs.writeFileSync(path.join(src, "lib/main.ts"), "export const x = 2;\n");
    fs.writeFileSync(path.join(src, "new.txt"), "brand new\n");
    fs.rmSync(path.join(src, "guide.md"));
    const { sqlite } = getStoreDb({ store: "notes" });
    sqlite.prepare("update chunks set chunking_version = 0 where doc_id = (select doc_id from documents where path = 'memory/people/ana.md')").run();
    const changes = (sqlite.prepare("select total_changes() as n").get() as { n: number }).n;
    const v = verifyStore({ handle: getStoreDb({ store: "notes" }) });
    expect((sqlite.prepare("select total_changes() as n").get() as { n: number }).n).toBe(changes);
    expect(v).toMatchObject({
      ok: false,
      consistent: true,
      in_sync: false,
      hash_mismatches: ["source/src-root/lib/main.ts"],
      missing_files: ["source/src-root/guide.md"],
      not_indexed: ["source/src-root/new.txt"],
      chunking_version: CHUNKING_VERSION,
    });
    expect(v.stale_chunks).toBeGreaterThan(0);
    // The next reindex repairs all of it, stale chunks included.
    reindexStore({ handle: getStoreDb({ store: "notes" }) });
    expect(verifyStore({ handle: getStoreDb({ store: "notes" }) }).ok).toBe(true);
  });

  itSqliteOnly("a missing index.db is rebuilt from the files on first access", FILES, () => {
    seed();
    reindexStore({ handle: getStoreDb({ store: "notes" }) });
    closeAllDatabases();
    for (const suffix of ["", "-wal", "-shm"]) fs.rmSync(storeIndexPath("notes") + suffix, { force: true });
    const { sqlite } = getStoreDb({ store: "notes" });
    ensureIndexBuilt({ handle: getStoreDb({ store: "notes" }) });
    expect(sqlite.prepare("select count(*) as n from memories").get()).toEqual({ n: 2 });
    expect(verifyStore({ handle: getStoreDb({ store: "notes" }) }).ok).toBe(true);
  });

  itSqliteOnly("API documents survive a reindex and keep their content", FILES, () => {
    seed();
    const handle = getStoreDb({ store: "notes" });
    const { sqlite } = handle;
    ingestDocument({ handle, path: "agent/notes.txt", origin: "api", text: "from an agent", mtime: 1 });
    reindexStore({ handle: getStoreDb({ store: "notes" }) });
    expect(sqlite.prepare("select content from documents where path = 'agent/notes.txt'").get()).toEqual({ content: "from an agent" });
    expect(verifyStore({ handle: getStoreDb({ store: "notes" }) }).counts.api_documents).toBe(1);
  });
});

describe("reindex racing a memory write", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
    createStore({ input: { name: "race" }, actor: "test" });
  });
  afterEach(() => env.cleanup());

  itSqliteOnly("a memory saved while a background reindex scans is indexed as saved, not as scanned", FILES, async () => {
    const dir = path.join(env.dataDir, "stores", "race", "memory", "inbox");
    fs.mkdirSync(dir, { recursive: true });
    for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(dir, `n${String(i).padStart(3, "0")}.md`), `# Note ${i}\n\noriginal text\n`);
    const handle = getStoreDb({ store: "race" });
    let saved = false;
    await reindexStoreAsync({
      handle,
      onProgress: (p) => {
        if (!saved && p.phase === "scanning" && p.done >= 128) {
          saved = true;
          updateMemory({ handle, input: updateMemorySchema.parse({ path: "inbox/n000", body: "# Note 0\n\nrevised meanwhile\n" }), actor: "test", now: Date.now() + 5000 });
        }
      },
    });
    expect(saved).toBe(true);
    expect(getMemoryByPath({ handle, memoryPath: "inbox/n000" }).body).toContain("revised meanwhile");
    const hits = (await searchStore({ handle, core: null, input: searchInputSchema.parse({ q: "revised meanwhile", mode: "fts", group: "chunk" }) })).results;
    expect(hits.map((h) => h.path)).toEqual(["memory/inbox/n000.md"]);
    expect(verifyStore({ handle: getStoreDb({ store: "race" }) }).ok).toBe(true);
  });
});

describe("reindex and verify through the stores backend, on this backend", () => {
  let env: TestEnv;
  beforeEach(async () => {
    env = await useTestBackend();
    await seedStore("notes");
  });
  afterEach(async () => {
    await env.cleanup();
  });

  async function reindex() {
    const started = await stores().startReindex({ store: "notes", actor: "user:admin" });
    for (let i = 0; i < 1000; i++) {
      const job = (await stores().getJob({ id: started.id, stores: null }))!;
      if (job.status !== "running") return job;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error("the reindex never finished");
  }

  it("API documents and memories survive a reindex, keep their content and stay searchable; verify agrees before and after", async () => {
    await seedDocument("notes", "agent/notes.txt", "from an agent about quartz");
    await stores().createMemory({ store: "notes", input: createMemorySchema.parse({ path: "people/ana", body: "# Ana\n\nLikes sqlite and quartz.\n", tags: ["people"] }), actor: "test" });
    const before = await stores().verifyStore({ store: "notes" });
    expect(before).toMatchObject({ ok: true, consistent: true });
    expect(before.counts.api_documents).toBe(1);

    const job = await reindex();
    expect(job.status).toBe("succeeded");
    expect(await storeSql("notes", "select content from documents where path = 'agent/notes.txt'")).toEqual([{ content: "from an agent about quartz" }]);
    expect((await stores().getMemory({ store: "notes", memoryPath: "people/ana" })).body).toContain("Likes sqlite");
    const found = (await searchHere("notes", { q: "quartz", mode: "fts" })).results.map((h) => h.path).sort();
    expect(found).toEqual(["agent/notes.txt", "memory/people/ana.md"]);
    const after = await stores().verifyStore({ store: "notes" });
    expect(after).toMatchObject({ ok: true, consistent: true, chunking_version: CHUNKING_VERSION });
    expect(after.counts.api_documents).toBe(1);
    expect((await governanceSql<{ action: string }>("select action from audit_log where action = 'store.reindex'")).length).toBe(1);
  });

  it("a deleted document and a deleted memory are gone from search and verify stays consistent", async () => {
    await seedDocument("notes", "agent/old.txt", "obsolete zeppelin note");
    await stores().createMemory({ store: "notes", input: createMemorySchema.parse({ path: "ops/zeppelin", body: "zeppelin hangar checklist" }), actor: "test" });
    await stores().deleteDocument({ store: "notes", path: "agent/old.txt", actor: "test" });
    await stores().deleteMemory({ store: "notes", memoryPath: "ops/zeppelin", actor: "test" });
    expect((await reindex()).status).toBe("succeeded");
    expect((await searchHere("notes", { q: "zeppelin", mode: "fts" })).results).toEqual([]);
    expect(await stores().verifyStore({ store: "notes" })).toMatchObject({ ok: true, consistent: true });
  });
});
