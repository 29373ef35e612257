import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DELETE as deleteDocumentRoute, PUT as putDocumentRoute } from "@/app/api/v1/stores/[store]/documents/route";
import { POST as createMemoryRoute, PUT as updateMemoryRoute } from "@/app/api/v1/stores/[store]/memories/route";
import { POST as think } from "@/app/api/v1/stores/[store]/thoughts/route";
import { DELETE as deleteThought } from "@/app/api/v1/stores/[store]/thoughts/[id]/route";
import { POST as createNodeRoute } from "@/app/api/v1/stores/[store]/nodes/route";
import { PATCH as updateNodeRoute } from "@/app/api/v1/stores/[store]/nodes/[id]/route";
import { POST as createFrameRoute } from "@/app/api/v1/stores/[store]/frames/route";
import { PATCH as updateFrameRoute } from "@/app/api/v1/stores/[store]/frames/[id]/route";
import { POST as createRelationRoute } from "@/app/api/v1/stores/[store]/relations/route";
import { PATCH as updateRelationRoute } from "@/app/api/v1/stores/[store]/relations/[id]/route";
import { rebuildBloatedTextIndexesPg } from "@/lib/index/engines/pg-text-indexes";
import { openStorePg } from "@/lib/stores/engines/pg";
import { getStoreDb, storeDir } from "@/lib/db/connection";
import { getPg } from "@/lib/db/pg";
import { quoteIdent, storeSchemaName } from "@/lib/db/pg-store";
import { documentFreedMostSql } from "@/lib/db/store-usage";
import { drainEmbeddings, onPg, seedStore, seedToken, storeSql, useTestBackend, type TestEnv } from "./backend";
import { callRoute } from "./helpers";

/**
 * DUALMIND_MAX_STORE_BYTES bounds what a store really takes on disk, derived
 * rows included (chunks, full-text and word lists, vectors, the embed queue):
 * a store filled to the limit, then embedded, grows by at most 1.25 times the
 * limit beyond its empty size (SECURITY.md, "Limits"), whatever the text.
 * SQLite: index.db and its WAL after a checkpoint, the ANN files and the
 * memory files; PostgreSQL: every relation of the store's schema.
 */
const LIMIT = 2 * 1024 * 1024;
const BOUND = 1.25;
let env: TestEnv;
let token = "";

beforeAll(async () => {
  env = await useTestBackend({ DUALMIND_MAX_STORE_BYTES: String(LIMIT) });
  token = await seedToken({ label: "w", agent_id: "disk-filler", scopes: ["write"] });
});
afterAll(async () => env?.cleanup());

const WORDS = "the of and to in is was that for on with as by at from his her which an be this are have had not but were they their one all we there been has when who would more out if about into than them can only other some time its could these two may then first any new very my".split(" ");
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
/** Sentences of common words and numbers, with paragraph breaks. */
function prose(bytes: number): string {
  let s = "";
  while (s.length < bytes) {
    s += Array.from({ length: 12 }, () => WORDS[Math.floor(rnd() * WORDS.length)] + (rnd() < 0.3 ? String(Math.floor(rnd() * 1000)) : "")).join(" ") + ". ";
    if (rnd() < 0.1) s += "\n\n";
  }
  return s;
}
/** Words that never repeat: the most full-text rows per byte. */
const distinct = (i: number, words: number) => Array.from({ length: words }, (_, j) => `${String.fromCharCode(97 + (j % 26))}${i}x${j}`).join(" ");

function du(p: string): number {
  if (!fs.existsSync(p)) return 0;
  const st = fs.statSync(p);
  return st.isDirectory() ? fs.readdirSync(p).reduce((n, f) => n + du(path.join(p, f)), 0) : st.size;
}

/** What the store takes on disk. */
async function onDisk(store: string): Promise<number> {
  if (onPg) {
    const [r] = await storeSql<{ b: unknown }>(
      store,
      `select coalesce(sum(pg_total_relation_size(c.oid)), 0) as b from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relkind in ('r', 'm')`,
      [storeSchemaName(store)],
    );
    return Number(r.b);
  }
  getStoreDb({ store }).sqlite.pragma("wal_checkpoint(TRUNCATE)");
  const dir = storeDir(store);
  return du(path.join(dir, "index.db")) + du(path.join(dir, "index.db-wal")) + du(path.join(dir, "index.ann")) + du(path.join(dir, "memory"));
}

type Answer = { status: number; json: { error?: { message: string; details: { limit?: string }[] } } };

/** Write with `write(i)` until the byte limit refuses one (422 naming it); then let the embed worker catch up. */
async function fill(store: string, write: (i: number) => Promise<Answer>): Promise<{ written: number; grew: number }> {
  await seedStore(store);
  const empty = await onDisk(store);
  for (let i = 0; i < 400; i++) {
    const r = await write(i);
    if (r.status < 300) continue;
    expect(r.status).toBe(422);
    expect(r.json.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
    await drainEmbeddings([store]);
    return { written: i, grew: (await onDisk(store)) - empty };
  }
  throw new Error(`store ${store} never filled`);
}

const putDoc = (store: string, p: string, content: string) => callRoute(putDocumentRoute, { method: "PUT", token, params: { store }, body: { path: p, content } }) as Promise<Answer>;

describe("DUALMIND_MAX_STORE_BYTES bounds the store on disk", () => {
  it("prose documents: filled to the limit and embedded, the store grew by at most 1.25 × the limit", async () => {
    const { written, grew } = await fill("disk-prose", (i) => putDoc("disk-prose", `p/d${i}.md`, prose(4000)));
    expect(written).toBeGreaterThan(2);
    expect(grew).toBeLessThanOrEqual(BOUND * LIMIT);
  });

  it("short-line documents (a chunk for every few bytes): the same bound", async () => {
    const { written, grew } = await fill("disk-lines", (i) => putDoc("disk-lines", `l/d${i}.txt`, `${i}\n` + "a\n".repeat(1000)));
    expect(written).toBeGreaterThan(2);
    expect(grew).toBeLessThanOrEqual(BOUND * LIMIT);
  });

  it("documents of words that never repeat (the most full-text rows): the same bound", async () => {
    const { written, grew } = await fill("disk-words", (i) => putDoc("disk-words", `w/d${i}.txt`, distinct(i, 600)));
    expect(written).toBeGreaterThan(2);
    expect(grew).toBeLessThanOrEqual(BOUND * LIMIT);
  });

  it("memories (their files counted too): the same bound", async () => {
    const { written, grew } = await fill("disk-mems", (i) => callRoute(createMemoryRoute, { token, params: { store: "disk-mems" }, body: { path: `n/m${i}`, body: prose(4000) } }) as Promise<Answer>);
    expect(written).toBeGreaterThan(2);
    expect(grew).toBeLessThanOrEqual(BOUND * LIMIT);
  });

  it("thoughts (each embedded and indexed): the same bound", async () => {
    const { written, grew } = await fill("disk-thoughts", (i) => callRoute(think, { token, params: { store: "disk-thoughts" }, body: { content: `thought ${i}: ${prose(300)}` } }) as Promise<Answer>);
    expect(written).toBeGreaterThan(2);
    expect(grew).toBeLessThanOrEqual(BOUND * LIMIT);
  });

  it("a thought into a full store is refused before anything is written: its files do not grow however often it is tried", async () => {
    const store = "disk-thoughts";
    await drainEmbeddings([store]);
    const before = await onDisk(store);
    for (let i = 0; i < 20; i++) {
      const r = (await callRoute(think, { token, params: { store }, body: { content: distinct(7000 + i, 1000) } })) as Answer;
      expect(r.status).toBe(422);
      expect(r.json.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
      // Refused by the check before the write, not by the totals' triggers after it.
      expect(r.json.error?.message).toContain("this write adds at least");
    }
    expect(await onDisk(store)).toBeLessThanOrEqual(before + 64 * 1024);
  });

  it.runIf(onPg)("thoughts written and deleted with ever-new words do not grow the full-text index without end: an index past its bound is rebuilt [PostgreSQL's GIN keeps every key it ever held]", async () => {
    const store = "disk-churn";
    await seedStore(store);
    const handle = await openStorePg({ pg: (await getPg())!, store });
    const indexBytes = async () => Number((await storeSql<{ b: unknown }>(store, `select pg_relation_size(to_regclass($1)) as b`, [`${quoteIdent(storeSchemaName(store))}.thoughts_tsv_gin`]))[0].b);
    const start = await indexBytes();
    for (let i = 0; i < 60; i++) {
      const t = (await callRoute(think, { token, params: { store }, body: { content: distinct(9000 + i, 1000) } })) as Answer & { json: { thought: { id: string } } };
      expect(t.status).toBe(201);
      expect((await callRoute(deleteThought, { method: "DELETE", token, params: { store, id: t.json.thought.id } })).status).toBe(200);
    }
    await (await getPg())!.pool.query(`vacuum ${quoteIdent(storeSchemaName(store))}.thoughts`);
    const grown = await indexBytes();
    expect(grown).toBeGreaterThan(start + 512 * 1024);
    expect(await rebuildBloatedTextIndexesPg({ handle, minBytes: 256 * 1024, now: Date.now() + 3_600_000 })).toContain("thoughts_tsv_gin");
    expect(await indexBytes()).toBeLessThan(start + 128 * 1024);
    // The store still finds what it holds.
    const kept = (await callRoute(think, { token, params: { store }, body: { content: "a kept thought about zanzibar" } })) as Answer;
    expect(kept.status).toBe(201);
    expect(Number((await storeSql<{ n: unknown }>(store, "select count(*) as n from thoughts where tsv @@ to_tsquery('english', 'zanzibar')"))[0].n)).toBe(1);
  });

  it("rewriting a full store's documents again and again, each time new text, keeps the bound (the embedding cache keeps no more vectors than the store)", async () => {
    const store = "disk-rewrite";
    const { written, grew } = await fill(store, (i) => putDoc(store, `r/d${i}.md`, prose(4000)));
    expect(grew).toBeLessThanOrEqual(BOUND * LIMIT);
    const empty = (await onDisk(store)) - grew;
    // PostgreSQL: the rows a rewrite leaves dead take room until vacuum makes it reusable (autovacuum; here after each
    // write). Only the store's relations: what onDisk measures, without the catalogs and every other schema each time.
    const schema = quoteIdent(storeSchemaName(store));
    const relations = onPg ? (await storeSql<{ name: string }>(store, "select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = ? and c.relkind in ('r', 'm')", [storeSchemaName(store)])).map((r) => `${schema}.${quoteIdent(r.name)}`) : [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < written; i++) {
        expect((await putDoc(store, `r/d${i}.md`, prose(4000))).status).toBeLessThan(500);
        await drainEmbeddings([store]);
        if (onPg) await (await getPg()!).pool.query(`vacuum ${relations.join(", ")}`);
      }
    }
    const [cache] = await storeSql<{ n: unknown }>(store, "select count(*) as n from embedding_cache");
    const [chunks] = await storeSql<{ n: unknown }>(store, "select count(*) as n from chunks");
    expect(Number(cache.n)).toBeLessThanOrEqual(Number(chunks.n));
    // PostgreSQL: vacuum reclaims dead rows only behind every open snapshot, and other test files share this cluster
    // (their transactions hold snapshots), so a margin for what it could not reclaim yet; dead words or rows counted
    // twice would be many times this.
    expect((await onDisk(store)) - empty).toBeLessThanOrEqual((onPg ? 1.5 : BOUND) * LIMIT);
  });

  it("rewriting one document with new words again and again does not fill the store: words no row holds any more go", async () => {
    const store = "disk-one";
    await seedStore(store);
    const usage = async () => Number((await storeSql<{ b: unknown }>(store, "select bytes as b from store_usage where id = 1"))[0].b);
    expect((await putDoc(store, "one.txt", distinct(100, 600))).status).toBe(200);
    const first = await usage();
    for (let i = 101; i <= 110; i++) expect((await putDoc(store, "one.txt", distinct(i, 600))).status).toBe(200);
    // One live document of the same size: the count is where it was, not ten documents' worth of dead words.
    expect(await usage()).toBeLessThanOrEqual(first * 1.1);
    if (onPg) {
      for (const table of ["fts_terms", "word_terms"]) expect(Number((await storeSql<{ n: unknown }>(store, `select count(*) as n from ${table} where rows <= 0`))[0].n), table).toBe(0);
    }
  });

  it("a new document into a full store is refused before anything is written: its files do not grow however often it is tried", async () => {
    const store = "disk-words";
    await drainEmbeddings([store]);
    const before = await onDisk(store);
    for (let i = 0; i < 20; i++) {
      const r = await putDoc(store, `w/refused-${i}.txt`, distinct(1000 + i, 3000));
      expect(r.status).toBe(422);
      expect(r.json.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
    }
    expect(await onDisk(store)).toBeLessThanOrEqual(before + 64 * 1024);
  });

  it("a replacement into a full store that cannot fit (a document rewritten larger, a memory updated larger) is refused before anything is written", async () => {
    await drainEmbeddings(["disk-words", "disk-mems"]);
    const docsBefore = await onDisk("disk-words");
    for (let i = 0; i < 15; i++) {
      const r = await putDoc("disk-words", "w/d0.txt", distinct(2000 + i, 3000));
      expect(r.status).toBe(422);
      expect(r.json.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
    }
    expect(await onDisk("disk-words")).toBeLessThanOrEqual(docsBefore + 64 * 1024);
    const memsBefore = await onDisk("disk-mems");
    for (let i = 0; i < 10; i++) {
      const r = (await callRoute(updateMemoryRoute, { method: "PUT", token, params: { store: "disk-mems" }, body: { path: "n/m0", body: distinct(3000 + i, 3000) } })) as Answer;
      expect(r.status).toBe(422);
      expect(r.json.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
    }
    expect(await onDisk("disk-mems")).toBeLessThanOrEqual(memsBefore + 64 * 1024);
    // A move that grows the memory is refused before it writes too (what its old path frees counted).
    for (let i = 0; i < 10; i++) {
      const r = (await callRoute(updateMemoryRoute, { method: "PUT", token, params: { store: "disk-mems" }, body: { path: "n/m0", move_to: `n/moved-${i}`, body: distinct(4000 + i, 3000) } })) as Answer;
      expect(r.status).toBe(422);
      expect(r.json.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
      if (onPg) expect(r.json.error?.message).toContain("this write adds at least");
    }
    expect(await onDisk("disk-mems")).toBeLessThanOrEqual(memsBefore + 64 * 1024);
  });

  it("a graph node, frame or relation updated larger in a full store is refused before anything is written; a smaller update still goes through", async () => {
    const store = "disk-graph";
    await seedStore(store);
    const post = async (route: typeof createNodeRoute, body: unknown) => ((await callRoute(route, { token, params: { store }, body })) as Answer & { json: Record<string, { id: string }> });
    const a = (await post(createNodeRoute, { name: "alpha", entity_type: "concept", attributes: { note: "small" } })).json.node;
    const b = (await post(createNodeRoute, { name: "beta", entity_type: "concept" })).json.node;
    const frame = (await post(createFrameRoute, { node_id: a.id, column: "semantic", properties: { note: "small" } })).json.frame;
    const relation = (await post(createRelationRoute, { from_id: a.id, to_id: b.id, relationship_type: "relates_to", attributes: { note: "small" } })).json.relation;
    expect([a, b, frame, relation].every((x) => typeof x?.id === "string")).toBe(true);
    // Filled most of the way by large documents (few writes), then to the brim by thoughts.
    for (let i = 0; i < 100; i++) {
      const r = await putDoc(store, `g/d${i}.md`, prose(40_000));
      if (r.status === 422) break;
      expect(r.status).toBe(200);
    }
    for (let i = 0; i < 400; i++) {
      const r = (await callRoute(think, { token, params: { store }, body: { content: `thought ${i}: ${prose(3000)}` } })) as Answer;
      if (r.status === 422) break;
      expect(r.status).toBe(201);
    }
    await drainEmbeddings([store]);
    const before = await onDisk(store);
    const big = (i: number) => ({ note: distinct(6000 + i, 5500) });
    const patch = (route: typeof updateNodeRoute, id: string, body: unknown) => callRoute(route, { method: "PATCH", token, params: { store, id }, body }) as Promise<Answer>;
    const refused: Answer[] = [];
    for (let i = 0; i < 5; i++) {
      refused.push(await patch(updateNodeRoute, a.id, { attributes: big(i) }));
      refused.push(await patch(updateFrameRoute, frame.id, { properties: big(10 + i) }));
      refused.push(await patch(updateRelationRoute, relation.id, { attributes: big(20 + i) }));
      // A relation written again merges its attributes into the one there: a replacement too.
      refused.push((await post(createRelationRoute, { from_id: a.id, to_id: b.id, relationship_type: "relates_to", attributes: big(30 + i) })) as Answer);
    }
    for (const r of refused) {
      expect(r.status).toBe(422);
      expect(r.json.error?.details[0].limit).toBe("DUALMIND_MAX_STORE_BYTES");
      // Refused by the check before the write, not by the totals' triggers after it.
      expect(r.json.error?.message).toContain("this write adds at least");
    }
    expect(await onDisk(store)).toBeLessThanOrEqual(before + 64 * 1024);
    // An update that makes a row smaller is not refused at a full store.
    expect((await patch(updateNodeRoute, a.id, { attributes: {} })).status).toBe(200);
    expect((await patch(updateFrameRoute, frame.id, { properties: {} })).status).toBe(200);
  });

  it.runIf(onPg)("a batch whose per-word rows alone would pass the limit is refused before anything is written, even into an empty store [PostgreSQL's posting and term rows; SQLite's full-text is counted by its text]", async () => {
    const store = "disk-batch";
    await seedStore(store);
    const before = await onDisk(store);
    const documents = Array.from({ length: 10 }, (_, i) => ({ path: `b/d${i}.txt`, content: distinct(5000 + i, 1100) }));
    for (let attempt = 0; attempt < 5; attempt++) {
      const r = (await callRoute(putDocumentRoute, { method: "PUT", token, params: { store }, body: { documents } })) as Answer;
      expect(r.status).toBe(422);
      // The check before the write refused it, not the totals' triggers after it.
      expect(r.json.error?.message).toContain("this write adds at least");
    }
    expect(await onDisk(store)).toBeLessThanOrEqual(before + 64 * 1024);
  });

  it("what the pre-write check takes a replacement to free is at most what deleting the document frees, and not much more (a word's term row only when the document holds all its postings)", async () => {
    const store = "disk-freed";
    await seedStore(store);
    // Prose that repeats a small vocabulary across its chunks, beside a document sharing some of its words.
    const vocab = Array.from({ length: 300 }, (_, i) => `w${i.toString(36)}q`);
    const text = (lines: number, from: number) => Array.from({ length: lines }, (_, l) => Array.from({ length: 12 }, (_, k) => vocab[(from + l * 7 + k * 13) % vocab.length]).join(" ")).join("\n");
    expect((await putDoc(store, "a/shared.txt", text(40, 5))).status).toBe(200);
    expect((await putDoc(store, "a/doc.txt", text(300, 0))).status).toBe(200);
    const sqlText = documentFreedMostSql(onPg ? "pg" : "sqlite");
    let n = 0;
    const query = onPg ? sqlText.replace(/\?/g, () => `$${++n}`) : sqlText;
    const [{ freed }] = await storeSql<{ freed: unknown }>(store, query, Array.from({ length: onPg ? n : (sqlText.match(/\?/g) ?? []).length }, () => "a/doc.txt"));
    const usage = async () => Number((await storeSql<{ b: unknown }>(store, "select bytes as b from store_usage where id = 1"))[0].b);
    const before = await usage();
    expect((await callRoute(deleteDocumentRoute, { method: "DELETE", token, params: { store }, url: "http://127.0.0.1/x?path=a/doc.txt" })).status).toBe(200);
    const actual = before - (await usage());
    expect(Number(freed)).toBeGreaterThanOrEqual(actual);
    expect(Number(freed)).toBeLessThanOrEqual(actual * 1.05 + 1024);
  });

  it.runIf(onPg)("a thought whose word-list rows would not fit is refused before it writes, though its row alone would [PostgreSQL's word lists]", async () => {
    const store = "disk-window";
    await seedStore(store);
    const used = async () => Number((await storeSql<{ bytes: unknown }>(store, "select bytes from store_usage where id = 1"))[0].bytes);
    // Fill to within 400 KiB of the limit: a 10 KB thought of new words counts ~120 KiB as a row, ~450 KiB with its word-list rows.
    // Large documents while far from it (few writes), then small ones to land within it.
    for (let i = 0, room = LIMIT; room > 400 * 1024; i++, room = LIMIT - (await used())) expect((await putDoc(store, `f/${i}.md`, prose(room > 800 * 1024 ? 15_000 : 1500))).status).toBe(200);
    await drainEmbeddings([store]);
    const room = LIMIT - (await used());
    expect(room).toBeGreaterThan(150 * 1024);
    const before = await onDisk(store);
    for (let i = 0; i < 10; i++) {
      const r = (await callRoute(think, { token, params: { store }, body: { content: distinct(12_000 + i, 1000) } })) as Answer;
      expect(r.status).toBe(422);
      expect(r.json.error?.message).toContain("this write adds at least");
    }
    expect(await onDisk(store)).toBeLessThanOrEqual(before + 64 * 1024);
  });

  it("a delete frees the room its derived rows took", async () => {
    const refused = await putDoc("disk-prose", "p/again.md", prose(4000));
    expect(refused.status).toBe(422);
    for (const p of ["p/d0.md", "p/d1.md"]) expect((await callRoute(deleteDocumentRoute, { method: "DELETE", token, params: { store: "disk-prose" }, url: `http://127.0.0.1/x?path=${p}` })).status).toBe(200);
    expect((await putDoc("disk-prose", "p/again.md", prose(4000))).status).toBe(200);
  });
});
