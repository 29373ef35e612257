import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb } from "@/lib/db/connection";
import { registerEmbeddable } from "@/lib/embed/embeddables";
import { getEmbedder, resetEmbedderForTests } from "@/lib/embed/model";
import { enqueueEmbeddings, getEmbedBacklog } from "@/lib/embed/queue";
import { forgetEmbeddings, knnSearch } from "@/lib/embed/vector-index";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { useTempDataDir } from "./helpers";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

registerEmbeddable({
  kind: "scrap",
  artifactType: "scrap",
  load: ({ handle, refIds: ids }) => new Map((handle.sqlite.prepare("select id, body from scraps where id in (select value from json_each(?))").all(JSON.stringify(ids)) as { id: number; body: string }[]).map((r) => [r.id, { text: r.body, inputHash: sha(r.body) }])),
  listAll: ({ handle }) => (handle.sqlite.prepare("select id, body from scraps").all() as { id: number; body: string }[]).map((r) => ({ refId: r.id, inputHash: sha(r.body) })),
});

describe("deleting an artifact", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
    resetEmbedderForTests();
  });
  afterEach(() => env.cleanup());

  it("removes its vector, its index entry and its queued work", async () => {
    const h = getStoreDb("s");
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
