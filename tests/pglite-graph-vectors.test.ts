import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom } from "@/bench/corpus";
import { migrateStoreSchema, useStoreSchema, type SqlRunner } from "@/lib/db/pg-store";
import { graphVectorSpace } from "@/lib/graph/engines/pg";
import { normalizeVector, pgvectorSupportPg, putKindEmbeddingsPg, spaceNeighboursPg } from "@/lib/index/vectors-pg";
import { patience } from "./fixtures/patience";

/**
 * Remember's KNN over thought and node vectors with pgvector (PGlite ships
 * it; the Debian server of tests/pg does not): the embeddings table's HNSW
 * index is walked for one kind, joined to its table by seq, only over
 * vectors of a row's current text — checked against exact cosine in JS.
 */
const DIM = 32;
const FP = "test-model";
const rand = seededRandom(11);
const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
const centers = Array.from({ length: 20 }, () => Array.from({ length: DIM }, gauss));
const near = (c: number[], noise: number) => c.map((x) => x + noise * gauss());
const rows = Array.from({ length: 400 }, (_, i) => ({ seq: i + 1, v: near(centers[i % centers.length], 0.6) }));

let client: PGlite;
let db: ReturnType<typeof drizzle>;
function inStore<T>(work: (tx: SqlRunner) => PromiseLike<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await useStoreSchema({ tx, schema: "store_g" });
    return await work(tx);
  });
}

beforeAll(async () => {
  client = await PGlite.create({ extensions: { vector } });
  db = drizzle(client);
  await db.execute(sql`create extension if not exists vector`);
  await db.execute(sql`create schema store_g`);
  await inStore((tx) => migrateStoreSchema({ tx, schema: "store_g" }));
  await inStore(async (tx) => {
    await tx.execute(sql`insert into thoughts (seq, id, content, framework, timestamp, tags, content_hash, created_by) values ${sql.join(
      rows.map((r) => sql`(${r.seq}, ${`t${r.seq}`}, ${`thought ${r.seq}`}, 'conversation', 1, '[]', ${`h${r.seq}`}, 'a')`),
      sql`, `,
    )}`);
    await putKindEmbeddingsPg({ tx, fingerprintId: FP, items: rows.map((r) => ({ kind: "thought", refId: r.seq, inputHash: `h${r.seq}`, vector: r.v })) });
    // A node with the same seq as a thought must never answer a thought query.
    await putKindEmbeddingsPg({ tx, fingerprintId: FP, items: [{ kind: "node", refId: 1, inputHash: "n1", vector: rows[0].v }] });
    await tx.execute(sql`analyze`);
  });
}, patience(120_000));

afterAll(async () => {
  await client?.close();
});

describe("remember's thought KNN with pgvector (PGlite)", () => {
  it("walks the embeddings HNSW index for thoughts by seq, and a thought whose text changed is no neighbour", async () => {
    expect((await inStore((tx) => pgvectorSupportPg({ db: tx, table: "embeddings" }))).hnswDimensions).toEqual([DIM]);
    const q = normalizeVector(near(centers[5], 0.3));
    const want = rows
      .map((r) => ({ id: r.seq, similarity: normalizeVector(r.v).reduce((s, x, i) => s + x * q[i], 0) }))
      .sort((a, b) => b.similarity - a.similarity || a.id - b.id)
      .slice(0, 10);
    const r = await inStore((tx) => spaceNeighboursPg({ tx, space: graphVectorSpace("thought"), fingerprintId: FP, query: q, k: 10 }));
    expect(r).toMatchObject({ ok: true, method: "hnsw" });
    if (!r.ok) return;
    expect(want.filter((w) => r.hits.some((h) => h.id === w.id)).length).toBeGreaterThanOrEqual(9);
    const top = want[0].id;
    await inStore((tx) => tx.execute(sql`update thoughts set content_hash = 'changed' where seq = ${top}`));
    const after = await inStore((tx) => spaceNeighboursPg({ tx, space: graphVectorSpace("thought"), fingerprintId: FP, query: q, k: 10 }));
    expect(after.ok && after.hits.map((h) => h.id)).not.toContain(top);
  });
});
