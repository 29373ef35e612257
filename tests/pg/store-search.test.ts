import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closePgHandle, openPgHandle, type PgHandle } from "@/lib/db/pg";
import { BuiltinProvider } from "@/lib/embed/providers/builtin";
import { computeFingerprint, type Fingerprint } from "@/lib/embed/providers";
import { chunkDocument, CHUNKING_VERSION } from "@/lib/index/chunking";
import { deleteApiDocument, putDocuments } from "@/lib/index/ingest";
import { putDocumentsSchema } from "@/lib/index/ingest";
import { searchInputSchema } from "@/lib/index/search";
import { searchStorePg, type PgQueryVector } from "@/lib/index/search-pg";
import { listChunksWithoutEmbeddingPg, putChunkEmbeddingsPg } from "@/lib/index/vectors-pg";
import { createMemoryPg } from "@/lib/index/memories-pg";
import { createMemorySchema } from "@/lib/index/memories";
import { withStoreTx, type PgStoreHandle } from "@/lib/db/pg-store";
import { createStorePg, openCoreForPg, openStorePg } from "@/lib/stores/engines/pg";
import { createTestDatabase } from "./helpers";

let pg: PgHandle;
let store: PgStoreHandle;
beforeAll(async () => {
  pg = await openPgHandle({ url: await createTestDatabase(), max: 6 });
  await createStorePg({ pg, input: { name: "kb" }, actor: "a" });
  store = await openStorePg({ pg, store: "kb" });
});
afterAll(async () => {
  await closePgHandle(pg);
});

const put = (handle: PgStoreHandle, docs: { path: string; content: string }[]) => putDocuments({ handle, input: putDocumentsSchema.parse({ documents: docs }), actor: "agent:a" });
const search = (handle: PgStoreHandle, q: Record<string, unknown>, opts: { core?: PgStoreHandle | null; vector?: PgQueryVector } = {}) =>
  searchStorePg({ handle, core: opts.core ?? null, input: searchInputSchema.parse({ mode: "fts", group: "chunk", ...q }), vector: opts.vector });

describe("PostgreSQL ingest", () => {
  it("writes the same deterministic chunks as SQLite, skips unchanged content, and replaces only changed chunks", async () => {
    const text = `# Proxy\n\n${"Configure the proxy with care. ".repeat(80)}\n\n## Timeouts\n\n${"Timeouts are configured per route. ".repeat(60)}\n`;
    const [first] = await put(store, [{ path: "docs/proxy.md", content: text }]);
    const expected = chunkDocument({ path: "docs/proxy.md", kind: "markdown", text });
    expect(first).toMatchObject({ status: "added", chunks: expected.length });
    const rows = await withStoreTx({ handle: store, readOnly: true, work: async (tx) => (await tx.execute(sql`select c.id, chunk_id, chunk_sha256, chunking_version, start_byte, end_byte from chunks c order by chunk_index`)).rows as Record<string, unknown>[] });
    expect(rows.map((r) => [r.chunk_id, r.chunk_sha256, r.chunking_version, r.start_byte, r.end_byte])).toEqual(expected.map((c) => [c.chunkId, c.chunkSha256, CHUNKING_VERSION, c.startByte, c.endByte]));

    const [again] = await put(store, [{ path: "docs/proxy.md", content: text }]);
    expect(again).toMatchObject({ status: "unchanged", inserted_chunk_rowids: [], removed_chunk_rowids: [] });

    const edited = text.replace("Timeouts are configured per route. ", "Timeouts are configured per upstream. ");
    const [changed] = await put(store, [{ path: "docs/proxy.md", content: edited }]);
    expect(changed.status).toBe("changed");
    // The first chunk did not change: it kept its id (its vectors stay joined).
    expect(changed.removed_chunk_rowids).not.toContain(Number(rows[0].id));
    expect(changed.inserted_chunk_rowids.length).toBe(changed.removed_chunk_rowids.length);
  });

  it("a batch is one transaction: a bad document in it leaves nothing written", async () => {
    await put(store, [{ path: "mixed/ok.md", content: "fine" }]);
    await withStoreTx({ handle: store, work: (tx) => tx.execute(sql`update documents set origin = 'file' where path = 'mixed/ok.md'`) });
    await expect(put(store, [{ path: "mixed/new.md", content: "new text" }, { path: "mixed/ok.md", content: "changed" }])).rejects.toMatchObject({ code: "conflict" });
    const paths = await withStoreTx({ handle: store, readOnly: true, work: async (tx) => (await tx.execute(sql`select path from documents where path like 'mixed/%'`)).rows });
    expect(paths).toEqual([{ path: "mixed/ok.md" }]);
    await withStoreTx({ handle: store, work: (tx) => tx.execute(sql`delete from documents where path like 'mixed/%'`) });
  });

  it("two replicas putting the same new documents at once: each stored once, no error, the loser sees it unchanged", async () => {
    const other = await openPgHandle({ url: pg.url, max: 3 });
    try {
      const replica = await openStorePg({ pg: other, store: "kb" });
      const docs = Array.from({ length: 5 }, (_, i) => ({ path: `race/doc-${i}.md`, content: `# Race ${i}\n${"Same words for both replicas. ".repeat(120)}` }));
      const [a, b] = await Promise.all([put(store, docs), put(replica, [...docs].reverse())]);
      const statuses = [...a, ...b].map((r) => r.status).sort();
      expect(statuses).toEqual([...Array(5).fill("added"), ...Array(5).fill("unchanged")]);
      const counts = await withStoreTx({ handle: store, readOnly: true, work: async (tx) => (await tx.execute(sql`select count(distinct d.doc_id)::int as docs, count(*)::int as chunks from documents d join chunks c on c.doc_id = d.doc_id where d.path like 'race/%'`)).rows[0] });
      const expectedChunks = docs.reduce((n, d) => n + chunkDocument({ path: d.path, kind: "markdown", text: d.content }).length, 0);
      expect(counts).toEqual({ docs: 5, chunks: expectedChunks });
    } finally {
      await closePgHandle(other);
    }
  });

  it("deleting a document removes its chunks and their full-text entries", async () => {
    await put(store, [{ path: "tmp/zebra.md", content: "zebras graze quietly" }]);
    expect((await search(store, { q: "zebra" })).results).toHaveLength(1);
    await deleteApiDocument({ handle: store, path: "tmp/zebra.md", actor: "a" });
    const after = await search(store, { q: "zebra" });
    expect(after.results).toEqual([]);
    expect(after.reason?.code).toBe("no_match");
    await expect(deleteApiDocument({ handle: store, path: "tmp/zebra.md", actor: "a" })).rejects.toMatchObject({ code: "not_found" });
  });
});

describe("PostgreSQL full-text search", () => {
  beforeAll(async () => {
    await put(store, [
      { path: "notes/cache.md", content: "# Caching\nThe cache layer stores rendered pages for an hour." },
      { path: "notes/deploy.md", content: "# Deploying\nDeployments run from the main branch after review." },
      { path: "code/router.ts", content: "export function route(path: string) { return handlers[path]; }" },
      { path: "notes/tokens.md", content: "Call cfg.reload() from node_modules/pkg/index.js, see https://example.org/docs or mail ops@example.net." },
      { path: "notes/quotes.md", content: "Literal tricky text: a & b | c, it's O'Brien's \\backslash\\ and (parens) <-> :* here." },
    ]);
  });

  it("stems: a search for one form finds the others (english configuration)", async () => {
    const r = await search(store, { q: "configuring proxies" });
    expect(r.results.map((h) => h.path)).toContain("docs/proxy.md");
    expect(r.match).toBe("'configur' & 'proxi'");
    expect(r.effective_mode).toBe("fts");
    expect(r.results[0].snippet).toMatch(/proxy/i);
    expect(r.results[0].highlights.length).toBeGreaterThan(0);
  });

  it("splits words as FTS5 does: parts of dotted names, paths, URLs and e-mail addresses are found", async () => {
    for (const q of ["reload", "cfg", "modules", "pkg", "docs", "ops"]) {
      expect((await search(store, { q })).results.map((h) => h.path), q).toContain("notes/tokens.md");
    }
  });

  it("match=all needs every word, match=any one of them", async () => {
    expect((await search(store, { q: "cache deployments" })).results).toEqual([]);
    const any = await search(store, { q: "cache deployments", match: "any" });
    expect(new Set(any.results.map((h) => h.path))).toEqual(new Set(["notes/cache.md", "notes/deploy.md"]));
    expect(any.match).toBe("'cach' | 'deploy'");
  });

  it("user text with tsquery operators, quotes and backslashes is searched as words, never as syntax", async () => {
    for (const q of ["a & b | c", "O'Brien's", "\\backslash\\", "(parens) <-> :*", "'; drop table chunks; --", "!!!", "b:* & !c"]) {
      const r = await search(store, { q, match: "any" });
      expect(r.reason?.code === "no_match" || r.results.some((h) => h.path === "notes/quotes.md"), q).toBe(true);
    }
    expect((await search(store, { q: "O'Brien's backslash" })).results.map((h) => h.path)).toEqual(["notes/quotes.md"]);
    expect((await search(store, { q: "\\backslash\\" })).results.map((h) => h.path)).toEqual(["notes/quotes.md"]);
    // Punctuation alone leaves no word: an honest empty answer, not an error.
    const none = await search(store, { q: "!!! <-> :*" });
    expect(none.results).toEqual([]);
    expect(none.reason?.code).toBe("no_match");
    // The table is still there.
    expect((await search(store, { q: "caching" })).results).toHaveLength(1);
  });

  it("ranks bm25-like: the chunk with more of the query's words comes first, and a rare word outweighs a common one", async () => {
    await put(store, [
      { path: "rank/one.md", content: "The kettle whistles." },
      { path: "rank/both.md", content: "The kettle whistles while the teapot steeps." },
    ]);
    const r = await search(store, { q: "kettle teapot", match: "any" });
    expect(r.results.map((h) => h.path).slice(0, 2)).toEqual(["rank/both.md", "rank/one.md"]);
    expect(r.results[0].score).toBeGreaterThan(r.results[1].score);
    // A chunk with only the rare word beats chunks with only the common one (idf), even a shorter one.
    await put(store, [
      ...Array.from({ length: 10 }, (_, i) => ({ path: `rank/common-${i}.md`, content: `Widget note ${i}.` })),
      { path: "rank/rare.md", content: "A single mention of the zeppelin today." },
    ]);
    const idf = await search(store, { q: "widget zeppelin", match: "any" });
    expect(idf.results[0].path).toBe("rank/rare.md");
  });

  it("filters by path prefix, kind and time; pages with offset and hasMore", async () => {
    expect((await search(store, { q: "route" })).results.map((h) => h.path).sort()).toEqual(["code/router.ts", "docs/proxy.md"]);
    expect((await search(store, { q: "route", prefix: "code/" })).results.map((h) => h.path)).toEqual(["code/router.ts"]);
    expect((await search(store, { q: "route", prefix: "notes/" })).results).toEqual([]);
    expect((await search(store, { q: "route", kind: "code" })).results.map((h) => h.path)).toEqual(["code/router.ts"]);
    expect((await search(store, { q: "route", kind: "markdown" })).results.map((h) => h.path)).toEqual(["docs/proxy.md"]);
    expect((await search(store, { q: "route", updated_after: Date.now() + 60_000 })).results).toEqual([]);
    expect((await search(store, { q: "route", updated_before: Date.now() + 60_000 })).results).toHaveLength(2);
    const p1 = await search(store, { q: "kettle", limit: 1 });
    const p2 = await search(store, { q: "kettle", limit: 1, offset: 1 });
    expect(p1.has_more).toBe(true);
    expect(p2.has_more).toBe(false);
    expect(p1.results[0].path).not.toBe(p2.results[0].path);
  });

  it("filters memories by tags and hides expired ones unless asked", async () => {
    await createMemoryPg({ handle: store, input: createMemorySchema.parse({ path: "prefs/tea", body: "Prefers oolong tea in the afternoon.", tags: ["drinks"] }), actor: "a" });
    await createMemoryPg({ handle: store, input: createMemorySchema.parse({ path: "prefs/old-tea", body: "Used to drink oolong tea at night.", tags: ["history"], expires_at: 1000 }), actor: "a" });
    expect((await search(store, { q: "oolong" })).results.map((h) => h.path)).toEqual(["memory/prefs/tea.md"]);
    expect((await search(store, { q: "oolong", include_expired: true })).results.map((h) => h.path).sort()).toEqual(["memory/prefs/old-tea.md", "memory/prefs/tea.md"]);
    expect((await search(store, { q: "oolong", tags: "history", include_expired: true })).results.map((h) => h.path)).toEqual(["memory/prefs/old-tea.md"]);
    expect((await search(store, { q: "oolong", tags: "drinks" })).results.map((h) => h.path)).toEqual(["memory/prefs/tea.md"]);
  });

  it("an empty store says store_empty; a miss says no_match", async () => {
    await createStorePg({ pg, input: { name: "empty" }, actor: "a" });
    const empty = await openStorePg({ pg, store: "empty" });
    expect((await search(empty, { q: "anything" })).reason?.code).toBe("store_empty");
    expect((await search(store, { q: "xylophone" })).reason?.code).toBe("no_match");
  });

  it("groups by document when asked, each document once with its best passages", async () => {
    const r = await search(store, { q: "configured timeouts", group: "document", match: "any" });
    const paths = r.results.map((h) => h.path);
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths[0]).toBe("docs/proxy.md");
    expect(r.results[0].passages?.length).toBeGreaterThan(0);
    // Each document on the page shows highlighted passages.
    for (const p of r.results[0].passages!) expect(p.highlights.length, p.snippet).toBeGreaterThan(0);
    expect(r.results[0].highlights.length).toBeGreaterThan(0);
  });

  it("include_core merges core's hits, read-only", async () => {
    await createStorePg({ pg, input: { name: "core" }, actor: "a" });
    const core = await openStorePg({ pg, store: "core" });
    await put(core, [{ path: "identity.md", content: "The caching policy everyone shares." }]);
    const coreReader = await openCoreForPg({ pg, handle: store, includeCore: true });
    const r = await search(store, { q: "caching" }, { core: coreReader });
    expect(r.stores).toEqual(["kb", "core"]);
    expect(r.results.map((h) => `${h.store}:${h.path}`).sort()).toEqual(["core:identity.md", "kb:notes/cache.md"]);
  });
});

describe("PostgreSQL vector and hybrid search (exact scan over real[], no pgvector here)", () => {
  let fp: Fingerprint;
  const provider = new BuiltinProvider();
  const queryVector = async (text: string): Promise<PgQueryVector> => ({ ok: true, fingerprint: fp, vector: (await provider.embed([text], "query"))[0] });

  beforeAll(async () => {
    fp = await computeFingerprint(provider);
    // Embed every chunk the way an embed worker would.
    await withStoreTx({ handle: store, work: async (tx) => {
      const todo = await listChunksWithoutEmbeddingPg({ tx, fingerprintId: fp.id, limit: 1000 });
      const vectors = await provider.embed(todo.map((c) => c.text), "document");
      await putChunkEmbeddingsPg({ tx, fingerprintId: fp.id, items: todo.map((c, i) => ({ chunkRowId: c.id, inputHash: c.chunkSha256, vector: vectors[i] })) });
    } });
  });

  it("vector mode ranks by cosine and finds a misspelling full-text cannot", async () => {
    const q = "cachng layer storing renderd pages";
    expect((await search(store, { q })).results).toEqual([]);
    const r = await search(store, { q, mode: "vector" }, { vector: await queryVector(q) });
    expect(r.effective_mode).toBe("vector");
    expect(r.results[0].path).toBe("notes/cache.md");
    expect(r.vectors).toMatchObject({ method: "exact", model: { id: fp.id }, pending_embeddings: 0 });
    const sims = r.results.map((h) => h.score);
    expect([...sims].sort((a, b) => b - a)).toEqual(sims);
  });

  it("neighbours less similar than the floor are left out, and an answer left empty by them says so", async () => {
    const r = await search(store, { q: "qqxv zzpt", mode: "vector" }, { vector: await queryVector("qqxv zzpt") });
    expect(r.results).toEqual([]);
    expect(r.reason?.code).toBe("below_similarity_floor");
    expect(r.vectors?.below_floor).toBeGreaterThan(0);
  });

  it("vector search applies the same filters", async () => {
    const r = await search(store, { q: "route handlers", mode: "vector", prefix: "notes/" }, { vector: await queryVector("route handlers") });
    expect(r.results.every((h) => h.path.startsWith("notes/"))).toBe(true);
  });

  it("hybrid fuses both legs by weighted reciprocal rank (lib/retrieval/fusion.ts)", async () => {
    const r = await search(store, { q: "cache pages", mode: "hybrid", explain: true }, { vector: await queryVector("cache pages") });
    expect(r.effective_mode).toBe("hybrid");
    expect(r.fusion).toMatchObject({ w_fts: 1, w_vec: 0.004, k: 60 });
    expect(r.results[0].path).toBe("notes/cache.md");
    expect(r.results[0].signals?.fts?.rank).toBe(1);
    expect(r.results[0].signals?.why).toMatch(/bm25 rank 1/);
  });

  it("without a usable query vector, vector modes answer lexically and say why — never a silent empty answer", async () => {
    const none = await search(store, { q: "caching", mode: "vector" });
    expect(none).toMatchObject({ effective_mode: "fts", fallback: { reason: "vectors_unavailable" }, reason: { code: "vectors_unavailable" } });
    expect(none.results.map((h) => h.path)).toEqual(["notes/cache.md"]);
    const down = await search(store, { q: "zzzz", mode: "hybrid" }, { vector: { ok: false, fallback: { reason: "provider_error", message: "provider down" } } });
    expect(down.results).toEqual([]);
    expect(down.reason).toMatchObject({ code: "provider_error", message: expect.stringContaining("nothing matched lexically") });
  });

  it("more vectors than the exact-scan limit: vectors_unavailable with the limit stated, answered lexically", async () => {
    const { vectorNeighboursPg } = await import("@/lib/index/vectors-pg");
    const q = (await provider.embed(["cache"], "query"))[0];
    const over = await withStoreTx({ handle: store, readOnly: true, work: (tx) => vectorNeighboursPg({ tx, fingerprintId: fp.id, query: q, k: 5, where: [], limit: 2 }) });
    expect(over).toMatchObject({ ok: false, reason: "vectors_unavailable", message: expect.stringContaining("limited to 2") });
    const within = await withStoreTx({ handle: store, readOnly: true, work: (tx) => vectorNeighboursPg({ tx, fingerprintId: fp.id, query: q, k: 5, where: [] }) });
    expect(within.ok && within.hits.length).toBe(5);
  });

  it("new chunks without vectors are reported as pending", async () => {
    await put(store, [{ path: "late/arrival.md", content: "A late arrival about caching strategies." }]);
    const r = await search(store, { q: "caching", mode: "hybrid" }, { vector: await queryVector("caching") });
    expect(r.vectors?.pending_embeddings).toBe(1);
    expect(r.warnings.map((w) => w.code)).toContain("embeddings_pending");
    // Full-text still finds it.
    expect(r.results.map((h) => h.path)).toContain("late/arrival.md");
  });
});
