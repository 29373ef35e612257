import { pgEngine } from "@/lib/db/engine";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { withStoreTx, type PgStoreHandle } from "@/lib/db/pg-store";
import { drainEmbedQueuesPg } from "@/lib/index/embed-queue-pg";
import { graphOn, type GraphBackend } from "@/lib/graph/backend";
import { storesOn } from "@/lib/stores/backend";
import { openStorePg } from "@/lib/stores/engines/pg";
import { useTwoReplicas } from "./helpers";

/**
 * Thoughts and graph nodes get vectors on PostgreSQL: queued in the
 * transaction that writes them, embedded by any replica's worker into
 * `embeddings`, with the thought's embedding state and novelty as on SQLite.
 */
const replicas = useTwoReplicas({ max: 4 });
let A: GraphBackend;
let B: GraphBackend;
let handle: PgStoreHandle;
const store = "kgv";

beforeAll(async () => {
  A = graphOn(pgEngine(replicas.a()));
  B = graphOn(pgEngine(replicas.b()));
  await storesOn(pgEngine(replicas.a())).createStore({ input: { name: store }, actor: "test" });
  handle = await openStorePg({ pg: replicas.a(), store });
});

const queue = () => withStoreTx({ handle, readOnly: true, work: async (tx) => (await tx.execute(sql`select kind, input_hash as hash from embed_queue order by id`)).rows as { kind: string; hash: string }[] });
const vectors = () => withStoreTx({ handle, readOnly: true, work: async (tx) => (await tx.execute(sql`select kind, count(*)::int as n from embeddings group by kind order by kind`)).rows });

describe("thought and node vectors on PostgreSQL", () => {
  it("queues a thought and a node with their write, embeds them on the other replica, and the thought's vector and novelty appear as on SQLite", async () => {
    const first = await A.think({ store, input: { content: "nginx returned 502 after the certificate renewal" }, actor: "a" });
    expect(first).toMatchObject({ embedding: "pending", novelty: null });
    const node = await A.createNode({ store, input: { name: "nginx", entity_type: "system", tags: ["proxy"] }, actor: "a" });
    expect((await queue()).map((q) => q.kind)).toEqual(["thought", "node"]);

    const drained = await drainEmbedQueuesPg({ handles: [await openStorePg({ pg: replicas.b(), store })] });
    expect(drained.embedded).toBe(2);
    expect(await queue()).toEqual([]);
    expect(await vectors()).toEqual([
      { kind: "node", n: 1 },
      { kind: "thought", n: 1 },
    ]);
    // The first thought has nothing before it: novelty 1, as on SQLite.
    expect(await B.getThought({ store, id: first.id })).toMatchObject({ embedding: "ready", novelty: 1 });

    const same = await A.think({ store, input: { content: "nginx returned 502 after the certificate renewal" }, actor: "a" });
    const other = await A.think({ store, input: { content: "grafana dashboards load slowly on monday mornings" }, actor: "a" });
    await drainEmbedQueuesPg({ handles: [handle] });
    const listed = await B.listThoughts({ store, filter: {} });
    const novelty = new Map(listed.thoughts.map((t) => [t.id, t.novelty]));
    expect(novelty.get(same.id)).toBeCloseTo(0, 5);
    expect(novelty.get(other.id)!).toBeGreaterThan(0.3);
    expect(listed.thoughts.every((t) => t.embedding === "ready")).toBe(true);

    const provenance = await withStoreTx({ handle, readOnly: true, work: async (tx) =>
      (await tx.execute(sql`select artifact_type as t, count(*)::int as n, count(chunking_version)::int as versioned from public.provenance where store = ${store} group by 1 order by 1`)).rows,
    });
    expect(provenance).toEqual([
      { t: "node_vector", n: 1, versioned: 0 },
      { t: "thought_vector", n: 3, versioned: 0 },
    ]);

    // An update that changes the node's embedded text queues it again; one that does not, does not.
    await B.updateNode({ store, id: node.id, input: { attributes: { port: 443 } } });
    expect(await queue()).toEqual([]);
    await B.updateNode({ store, id: node.id, input: { tags: ["proxy", "tls"] } });
    expect((await queue()).map((q) => q.kind)).toEqual(["node"]);
    await drainEmbedQueuesPg({ handles: [handle] });

    // Deletes take the vectors with them.
    await A.deleteThought({ store, id: other.id, actor: "a" });
    await A.deleteNode({ store, id: node.id, actor: "a" });
    expect(await vectors()).toEqual([{ kind: "thought", n: 2 }]);
  });
});
