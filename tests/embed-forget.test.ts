import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { graphBackend } from "@/lib/graph/backend";
import { registerEmbeddable } from "@/lib/embed/embeddables";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { enqueueEmbeddings, getEmbedBacklog } from "@/lib/embed/queue";
import { forgetEmbeddings, knnSearch } from "@/lib/embed/vector-index";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { drainEmbeddings, itSqliteOnly, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

registerEmbeddable({
  kind: "scrap",
  artifactType: "scrap",
  load: ({ handle, refIds: ids }) => new Map((handle.sqlite.prepare("select id, body from scraps where id in (select value from json_each(?))").all(JSON.stringify(ids)) as { id: number; body: string }[]).map((r) => [r.id, { text: r.body, inputHash: sha(r.body) }])),
  listAll: ({ handle }) => (handle.sqlite.prepare("select id, body from scraps").all() as { id: number; body: string }[]).map((r) => ({ refId: r.id, inputHash: sha(r.body) })),
});

describe("deleting an artifact", () => {
  let env: TestEnv;
  beforeEach(async () => {
    env = await useTestBackend();
    resetEmbedderForTests();
  });
  afterEach(async () => env.cleanup());

  it("a deleted graph node takes its vector and its queued work with it, and remember no longer finds it", async () => {
    const g = graphBackend();
    const store = "s";
    await seedStore(store);
    const names = ["kubernetes pod eviction", "kubernetes node pressure", "bread recipe"];
    const nodes = [];
    for (const name of names) nodes.push(await g.createNode({ store, input: { name, entity_type: "concept" }, actor: "t" }));
    await drainEmbeddings([store]);
    // A rename queues the node's new text: work that must go with it.
    await g.updateNode({ store, id: nodes[1].id, input: { display_name: "Kubernetes node pressure" } });
    const count = async (table: string) => (await storeSql<{ n: number }>(store, `select cast(count(*) as integer) as n from ${table} where kind = 'node'`))[0].n;
    expect([await count("embeddings"), await count("embed_queue")]).toEqual([3, 1]);
    const found = async () => (await g.remember({ store, input: { query: "kubernetes node pressure", kinds: ["node"] } })).results.map((r) => r.id);
    expect(await found()).toContain(nodes[1].id);
    await g.deleteNode({ store, id: nodes[1].id, actor: "t" });
    expect([await count("embeddings"), await count("embed_queue")]).toEqual([2, 0]);
    expect(await found()).not.toContain(nodes[1].id);
  });

  itSqliteOnly("removes its vector, its index entry and its queued work", "a test-owned kind in a SQLite table, and the SQLite vector index (sqlite-vec and the approximate index beside the exact scan)", async () => {
    const h = getStoreDb({ store: "s" });
    h.sqlite.exec("create table scraps(id integer primary key, body text)");
    h.sqlite.exec("insert into scraps values (1, 'kubernetes pod eviction'), (2, 'kubernetes node pressure'), (3, 'bread recipe')");
    enqueueEmbeddings({ handle: h, items: [1, 2, 3].map((id) => ({ kind: "scrap", refId: id, inputHash: "x".repeat(64) })) });
    await drainEmbedQueues({ stores: ["s"] });
    enqueueEmbeddings({ handle: h, items: [{ kind: "scrap", refId: 2, inputHash: "y".repeat(64) }] });
    const fp = await getEmbedder().fingerprint;
    const q = (await getEmbedder().provider.embed(["kubernetes"], "query"))[0];
    expect(knnSearch({ handle: h, kind: "scrap", fingerprintId: fp.id, query: q, k: 3 }).hits.map((x) => x.refId)).toContain(2);
    h.sqlite.transaction(() => {
      h.sqlite.exec("delete from scraps where id = 2");
      forgetEmbeddings({ handle: h, items: [{ kind: "scrap", refId: 2 }] });
    })();
    expect(knnSearch({ handle: h, kind: "scrap", fingerprintId: fp.id, query: q, k: 3 }).hits.map((x) => x.refId)).toEqual([1, 3]);
    expect(knnSearch({ handle: h, kind: "scrap", fingerprintId: fp.id, query: q, k: 3, exact: true }).hits.map((x) => x.refId)).toEqual([1, 3]);
    expect(getEmbedBacklog({ handle: h }).pending).toBe(0);
  });
});
