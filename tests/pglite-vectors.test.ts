import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { sql, type SQL } from "drizzle-orm";
import { drizzle } from "drizzle-orm/pglite";
import { PgDialect } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom } from "@/bench/corpus";
import { migrateStoreSchema, useStoreSchema, type SqlRunner } from "@/lib/db/pg-store";
import { chunkFiltersPg } from "@/lib/index/search-pg";
import type { SearchInput } from "@/lib/index/search";
import { hnswKnnSql, kindVectorSpace, normalizeVector, pgvectorSupportPg, putChunkEmbeddingsPg, putKindEmbeddingsPg, spaceNeighboursPg, vectorNeighboursPg } from "@/lib/index/vectors-pg";

/**
 * The pgvector path of lib/index/vectors-pg.ts on PGlite, which ships the
 * `vector` extension (the Debian PostgreSQL of tests/pg has none). The same
 * store migrations and the same SQL as on a server; answers are checked
 * against exact cosine computed here in JS.
 */
const DIM = 64;
const ROWS = 3_000;
const FP = "test-model";
const NOW = 1_790_000_000_000;

const rand = seededRandom(7);
const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
/** Clustered vectors (40 topics + noise), as embeddings of notes are. */
const centers = Array.from({ length: 40 }, () => Array.from({ length: DIM }, gauss));
const near = (c: number[], noise: number) => c.map((x) => x + noise * gauss());

type Row = { id: number; path: string; kind: string; mtime: number; v: number[] };
let db: ReturnType<typeof drizzle>;
let client: PGlite;
const rowsInDb: Row[] = [];

/** Run `work` in a transaction on the test store's schema, as withStoreTx does on a server. */
function inStore<T>(work: (tx: SqlRunner) => PromiseLike<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await useStoreSchema({ tx, schema: "store_t" });
    return await work(tx);
  });
}

function exactTop(q: number[], k: number, pass: (r: Row) => boolean): { id: number; similarity: number }[] {
  const qn = normalizeVector(q);
  return rowsInDb
    .filter(pass)
    .map((r) => {
      const v = normalizeVector(r.v);
      return { id: r.id, similarity: v.reduce((s, x, i) => s + x * qn[i], 0) };
    })
    .sort((a, b) => b.similarity - a.similarity || a.id - b.id)
    .slice(0, k);
}

const recall = (got: { id: number }[], want: { id: number }[]) => want.filter((w) => got.some((g) => g.id === w.id)).length / want.length;

const filters = (input: Partial<SearchInput>): SQL[] => chunkFiltersPg({ input: { include_expired: false, ...input } as SearchInput, now: NOW });

beforeAll(async () => {
  client = await PGlite.create({ extensions: { vector } });
  db = drizzle(client);
  // The app expects an admin to create the extension (lib/index/vectors-pg.ts); here the test is the admin.
  await db.execute(sql`create extension if not exists vector`);
  await db.execute(sql`create schema store_t`);
  await inStore((tx) => migrateStoreSchema({ tx, schema: "store_t" }));
  for (let i = 1; i <= ROWS; i++) {
    const kind = i % 3 === 0 ? "code" : "markdown";
    const path = i % 5 === 0 ? `projects/x/${i}.md` : `misc/${i}.md`;
    rowsInDb.push({ id: i, path, kind, mtime: NOW - i * 60_000, v: near(centers[i % centers.length], 0.6) });
  }
  await inStore(async (tx) => {
    for (let at = 0; at < ROWS; at += 500) {
      const batch = rowsInDb.slice(at, at + 500);
      await tx.execute(sql`insert into documents (doc_id, path, origin, kind, sha256, bytes, mtime, indexed_at) values ${sql.join(
        batch.map((r) => sql`(${r.id}, ${r.path}, 'api', ${r.kind}, ${`sha${r.id}`}, 10, ${r.mtime}, ${NOW})`),
        sql`, `,
      )}`);
      await tx.execute(sql`insert into chunks (id, chunk_id, doc_id, chunk_index, chunk_sha256, chunking_version, start_byte, end_byte, text) values ${sql.join(
        batch.map((r) => sql`(${r.id}, ${`c${r.id}`}, ${r.id}, 0, ${`h${r.id}`}, 1, 0, 10, ${`chunk ${r.id}`})`),
        sql`, `,
      )}`);
      await putChunkEmbeddingsPg({ tx, fingerprintId: FP, items: batch.map((r) => ({ chunkRowId: r.id, inputHash: `h${r.id}`, vector: r.v })), now: NOW });
    }
  });
  // A server's autovacuum keeps the planner's statistics; PGlite runs none.
  await inStore((tx) => tx.execute(sql`analyze`));
}, 240_000);

afterAll(async () => {
  await client?.close();
});

describe("pgvector on PGlite", () => {
  it("finds pgvector and builds the cosine HNSW index of the dimension on the first vector write", async () => {
    const support = await inStore((tx) => pgvectorSupportPg({ db: tx }));
    expect(support.pgvector).toMatch(/^0\.(8|9)\./);
    expect(support.iterativeScan).toBe(true);
    expect(support.hnswDimensions).toEqual([DIM]);
    const [idx] = (await inStore((tx) => tx.execute(sql`select indexdef from pg_indexes where indexname = ${`chunk_embeddings_hnsw_${DIM}`}`))).rows as { indexdef: string }[];
    expect(idx.indexdef).toContain("USING hnsw");
    expect(idx.indexdef).toContain("vector_cosine_ops");
  });

  it("returns the true nearest chunks (recall@10 against exact cosine in JS), with their cosine similarity", async () => {
    let sum = 0;
    const queries = Array.from({ length: 20 }, (_, i) => near(centers[(i * 7) % centers.length], 0.8));
    for (const q of queries) {
      const r = await inStore((tx) => vectorNeighboursPg({ tx, fingerprintId: FP, query: q, k: 10, where: [] }));
      if (!r.ok) throw new Error(r.message);
      expect(r.method).toBe("hnsw");
      expect(r.hits).toHaveLength(10);
      const want = exactTop(q, 10, () => true);
      sum += recall(r.hits, want);
      const exactSim = new Map(exactTop(q, ROWS, () => true).map((h) => [h.id, h.similarity]));
      for (const h of r.hits) expect(h.similarity).toBeCloseTo(exactSim.get(h.id)!, 4);
    }
    expect(sum / queries.length).toBeGreaterThanOrEqual(0.95);
    // A stored vector is its own nearest neighbour.
    const self = rowsInDb[1234];
    const r = await inStore((tx) => vectorNeighboursPg({ tx, fingerprintId: FP, query: self.v, k: 1, where: [] }));
    expect(r.ok && r.hits[0].id).toBe(self.id);
  });

  it("keeps prefix, kind and time filters correct: only matching chunks, the nearest of them", async () => {
    let sum = 0;
    const since = NOW - 1_500 * 60_000;
    for (let i = 0; i < 10; i++) {
      const q = near(centers[i], 0.8);
      const r = await inStore((tx) => vectorNeighboursPg({ tx, fingerprintId: FP, query: q, k: 10, where: filters({ prefix: "projects/", kind: ["markdown"], updated_after: since }) }));
      if (!r.ok) throw new Error(r.message);
      const pass = (row: Row) => row.path.startsWith("projects/") && row.kind === "markdown" && row.mtime >= since;
      const want = exactTop(q, 10, pass);
      expect(r.hits).toHaveLength(10);
      for (const h of r.hits) expect(pass(rowsInDb[h.id - 1])).toBe(true);
      sum += recall(r.hits, want);
    }
    expect(sum / 10).toBeGreaterThanOrEqual(0.95);
  });

  it("a filter fewer chunks pass than k asked gets all of them, in exact order", async () => {
    const q = near(centers[3], 0.8);
    const since = NOW - 40 * 60_000;
    const r = await inStore((tx) => vectorNeighboursPg({ tx, fingerprintId: FP, query: q, k: 10, where: filters({ prefix: "projects/", updated_after: since }) }));
    if (!r.ok) throw new Error(r.message);
    const want = exactTop(q, 10, (row) => row.path.startsWith("projects/") && row.mtime >= since);
    expect(want.length).toBe(8);
    expect(r.hits.map((h) => h.id)).toEqual(want.map((h) => h.id));
  });

  it("a walk that comes back short is completed by an exact scan only while the rows passing the filters are within the exact-scan limit", async () => {
    const q = near(centers[3], 0.8);
    const k = 20;
    const dialect = new PgDialect();
    // The statements run for real; only the index walk's rows are cut to 3, as a walk stopped early (hnsw.max_scan_tuples) returns.
    const shortWalk = (limit?: number) =>
      inStore(async (tx) => {
        const exactScans: string[] = [];
        const runner: SqlRunner = {
          execute: async (query: SQL) => {
            const text = dialect.sqlToQuery(query).sql;
            const r = await tx.execute(query);
            if (text.includes("<=>") && text.includes(") + 0")) exactScans.push(text);
            else if (text.includes("<=>")) return { rows: r.rows.slice(0, 3) };
            return r;
          },
        };
        return { answer: await vectorNeighboursPg({ tx: runner, fingerprintId: FP, query: q, k, where: [], limit }), exactScans };
      });
    const within = await shortWalk();
    if (!within.answer.ok) throw new Error(within.answer.message);
    expect(within.exactScans).toHaveLength(1);
    expect(within.answer.hits.map((h) => h.id)).toEqual(exactTop(q, k, () => true).map((h) => h.id));
    // All 3,000 rows pass, over a limit of 2,000: no unbounded exact scan, the walk's answer stands.
    const over = await shortWalk(2_000);
    if (!over.answer.ok) throw new Error(over.answer.message);
    expect(over.exactScans).toEqual([]);
    expect(over.answer).toMatchObject({ method: "hnsw" });
    expect(over.answer.ok && over.answer.hits).toHaveLength(3);
  });

  it("a query vector of another dimension is refused with a reason that says so, not an empty answer", async () => {
    const r = await inStore((tx) => vectorNeighboursPg({ tx, fingerprintId: FP, query: new Array(32).fill(0.1), k: 5, where: [] }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toBe("vectors_unavailable");
    expect(r.message).toContain("32 dimensions");
    expect(r.message).toContain(`${DIM}`);
  });

  it("walks the HNSW index (EXPLAIN), with and without filters, over a few thousand vectors", async () => {
    const q = near(centers[5], 0.8);
        // (When the planner expects few rows to pass the filters — a path prefix it cannot estimate, say — it may rank them by
    // an exact scan instead: as correct, and cheap for few rows. Kind and time it estimates from statistics.)
    for (const where of [[], filters({ kind: ["markdown"], updated_after: NOW - 2_500 * 60_000 })]) {
      const plan = await inStore(async (tx) => {
        await tx.execute(sql`select set_config('hnsw.iterative_scan', 'strict_order', true)`);
        return ((await tx.execute(sql`explain ${hnswKnnSql({ fingerprintId: FP, query: q, k: 10, where })}`)).rows as { "QUERY PLAN": string }[]).map((r) => r["QUERY PLAN"]).join("\n");
      });
      expect(plan).toContain(`Index Scan using chunk_embeddings_hnsw_${DIM}`);
    }
  });
});

describe("pgvector on PGlite: the kind-generic embeddings (traces, learnings)", () => {
  const TRACES = 300;
  const traceRows: Row[] = [];
  beforeAll(async () => {
    for (let i = 1; i <= TRACES; i++) traceRows.push({ id: i, path: "", kind: "trace", mtime: NOW, v: near(centers[i % centers.length], 0.6) });
    await inStore(async (tx) => {
      await tx.execute(sql`insert into reasoning_traces (id, agent_id, intent_verb, intent_target, shard_type, key_files, outcome, key_issue, error_tags, summary_descriptor, descriptor_version, descriptor_hash, created_at, last_seen_at) values ${sql.join(
        traceRows.map((r) => sql`(${r.id}, 'a', 'fix', ${`thing ${r.id}`}, 'ops', '{}', 'failure', '', '{}', ${`Intent: fix thing ${r.id}`}, 1, ${`d${r.id}`}, ${NOW}, ${NOW})`),
        sql`, `,
      )}`);
      await putKindEmbeddingsPg({ tx, fingerprintId: FP, items: traceRows.map((r) => ({ kind: "trace", refId: r.id, inputHash: `d${r.id}`, vector: r.v })), now: NOW });
      // A learning with the same ids must never answer a trace query.
      await putKindEmbeddingsPg({ tx, fingerprintId: FP, items: [{ kind: "learning", refId: 1, inputHash: "l1", vector: traceRows[0].v }], now: NOW });
      await tx.execute(sql`analyze`);
    });
  });

  it("builds the embeddings table's own HNSW index and walks it for a kind, only over vectors of the row's current text", async () => {
    expect((await inStore((tx) => pgvectorSupportPg({ db: tx, table: "embeddings" }))).hnswDimensions).toEqual([DIM]);
    const space = kindVectorSpace({ kind: "trace", table: "reasoning_traces", hashColumn: "descriptor_hash" });
    const q = near(centers[3], 0.3);
    const want = traceRows
      .map((r) => ({ id: r.id, similarity: normalizeVector(r.v).reduce((s, x, i) => s + x * normalizeVector(q)[i], 0) }))
      .sort((a, b) => b.similarity - a.similarity || a.id - b.id)
      .slice(0, 10);
    const r = await inStore((tx) => spaceNeighboursPg({ tx, space, fingerprintId: FP, query: q, k: 10 }));
    expect(r).toMatchObject({ ok: true, method: "hnsw" });
    if (!r.ok) return;
    expect(recall(r.hits, want)).toBeGreaterThanOrEqual(0.9);
    // The top trace's descriptor changes: its old vector is stale and is no neighbour any more.
    const top = want[0].id;
    await inStore((tx) => tx.execute(sql`update reasoning_traces set descriptor_hash = 'changed' where id = ${top}`));
    const after = await inStore((tx) => spaceNeighboursPg({ tx, space, fingerprintId: FP, query: q, k: 10 }));
    expect(after.ok && after.hits.map((h) => h.id)).not.toContain(top);
  });
});
