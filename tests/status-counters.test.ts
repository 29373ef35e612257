import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb, type StoreHandle } from "@/lib/db/connection";
import { EMBEDDABLE_KINDS } from "@/lib/embeddable-kinds";
import { readLiveCounts } from "@/lib/embed/counters";
import { computeDrift } from "./fixtures/drift-recount";
import { getEmbedder, readActiveFingerprintId } from "@/lib/embed/model";
import { claimEmbedBatch, failEmbedItems, retryParkedEmbeddings } from "@/lib/embed/queue";
import { startReembed } from "@/lib/embed/reembed";
import { getStoreStatus } from "@/lib/embed/status";
import { processEmbedBatch } from "@/lib/embed/worker";
import { createNode, deleteNode, updateNode } from "@/lib/graph/nodes";
import { deleteThought, thinkThought } from "@/lib/graph/thoughts";
import { deleteApiDocument, putDocuments } from "@/lib/index/ingest";
import { createStore, openStore } from "@/lib/stores/stores";
import { restartWith, useTempDataDir } from "./helpers";

/** Small deterministic PRNG (mulberry32): a failing seed reproduces. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The full recount the counters must equal: every artifact against its vectors (computeDrift) and the whole queue. */
async function recount(handle: StoreHandle) {
  const queue = handle.sqlite.prepare("select count(*) filter (where parked_at is null) as pending, count(*) filter (where parked_at is not null) as parked from embed_queue").get() as { pending: number; parked: number };
  const configured = await getEmbedder().fingerprint;
  // computeDrift adopts the configured model when the store has none yet; only recount fresh/stale when one exists.
  const active = readActiveFingerprintId({ handle });
  const drift = active ? computeDrift({ handle, configured }) : null;
  const artifacts = handle.sqlite.prepare("select count(*) as n from embeddable_hashes").get() as { n: number };
  return { artifacts: drift?.artifacts ?? artifacts.n, fresh: drift?.fresh ?? 0, stale: drift?.stale ?? 0, pending: queue.pending, parked: queue.parked, byKind: drift?.by_kind ?? null };
}

async function expectCountersMatch(handle: StoreHandle, step: string) {
  const live = readLiveCounts({ handle });
  const full = await recount(handle);
  expect({ step, artifacts: live.artifacts, fresh: live.fresh, stale: live.stale, pending: live.pending, parked: live.parked }).toEqual({
    step,
    artifacts: full.artifacts,
    fresh: full.fresh,
    stale: full.stale,
    pending: full.pending,
    parked: full.parked,
  });
  if (full.byKind) {
    for (const [kind, k] of Object.entries(full.byKind)) expect({ step, kind, ...live.byKind[kind], pending: undefined, parked: undefined }).toEqual({ step, kind, ...k, pending: undefined, parked: undefined });
  }
}

describe("live status counters", () => {
  let env: ReturnType<typeof useTempDataDir>;
  beforeEach(() => {
    env = useTempDataDir();
  });
  afterEach(() => {
    restartWith({ DUALMIND_EMBED_DIM: undefined, DUALMIND_EMBED_MODEL: undefined });
    env.cleanup();
  });

  it("every embeddable kind has counter triggers", () => {
    createStore({ input: { name: "k" }, actor: "test" });
    const sql = (getStoreDb({ store: "k" }).sqlite.prepare("select group_concat(sql, ' ') as s from sqlite_master where type = 'trigger' and name like 'status_%'").get() as { s: string }).s;
    for (const e of EMBEDDABLE_KINDS) expect(sql, `kind ${e.kind}`).toContain(`'${e.kind}'`);
  });

  it("follow an artifact through edit and re-embed of the same row (vector updated in place)", async () => {
    createStore({ input: { name: "e" }, actor: "test" });
    const handle = openStore({ store: "e" });
    const node = createNode({ handle, input: { name: "nginx", entity_type: "system" }, actor: "test" });
    await expectCountersMatch(handle, "created");
    await processEmbedBatch({ handle });
    await expectCountersMatch(handle, "embedded");
    expect(readLiveCounts({ handle })).toMatchObject({ artifacts: 1, fresh: 1, stale: 0, pending: 0 });
    updateNode({ handle, id: node.id, input: { display_name: "NGINX proxy" } });
    expect(readLiveCounts({ handle })).toMatchObject({ fresh: 0, stale: 1, pending: 1 });
    await processEmbedBatch({ handle });
    expect(readLiveCounts({ handle })).toMatchObject({ fresh: 1, stale: 0, pending: 0 });
    await expectCountersMatch(handle, "re-embedded");
  });

  for (const seed of [1, 7, 42]) {
    it(`stay equal to a full recount over random enqueue / complete / park / retry / edit / delete / drift / re-embed (seed ${seed})`, async () => {
      const random = rng(seed);
      const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
      createStore({ input: { name: "p" }, actor: "test" });
      let handle = openStore({ store: "p" });
      const docs = new Set<string>();
      const thoughts: string[] = [];
      const nodes: string[] = [];
      let model = 0;
      for (let step = 0; step < 60; step++) {
        const op = pick(["put", "put", "edit", "delete", "embed", "embed", "park", "retry", "think", "unthink", "node", "renode", "unnode", "drift", "reembed"]);
        switch (op) {
          case "put": {
            const path = `d/${Math.floor(random() * 1e6)}.md`;
            putDocuments({ handle, input: { path, content: `# ${path}\n\nbody ${random()} ${"word ".repeat(Math.floor(random() * 200))}` }, actor: "test" });
            docs.add(path);
            break;
          }
          case "edit":
            if (docs.size) putDocuments({ handle, input: { path: pick([...docs]), content: `# edited\n\n${random()}` }, actor: "test" });
            break;
          case "delete":
            if (docs.size) {
              const path = pick([...docs]);
              deleteApiDocument({ handle, path, actor: "test" });
              docs.delete(path);
            }
            break;
          case "embed":
            await processEmbedBatch({ handle, batchSize: 1 + Math.floor(random() * 8) });
            break;
          case "park": {
            const claimed = claimEmbedBatch({ handle, workerId: "w", limit: 3, leaseMs: 60_000 });
            failEmbedItems({ handle, items: claimed, workerId: "w", error: "test: refused", retryable: false, maxAttempts: 6 });
            break;
          }
          case "retry":
            retryParkedEmbeddings({ handle, actor: "test" });
            break;
          case "think":
            thoughts.push(thinkThought({ handle, input: { content: `thought ${random()}` }, actor: "test" }).id);
            break;
          case "unthink":
            if (thoughts.length) deleteThought({ handle, id: thoughts.splice(Math.floor(random() * thoughts.length), 1)[0], actor: "test" });
            break;
          case "node":
            nodes.push(createNode({ handle, input: { name: `n${random()}`, entity_type: "concept" }, actor: "test" }).id);
            break;
          case "renode":
            if (nodes.length) updateNode({ handle, id: pick(nodes), input: { display_name: `renamed ${random()}` } });
            break;
          case "unnode":
            if (nodes.length) deleteNode({ handle, id: nodes.splice(Math.floor(random() * nodes.length), 1)[0], actor: "test" });
            break;
          case "drift":
            // An operator changes the model: the store's vectors are now from another one.
            model = (model + 1) % 2;
            restartWith(model ? { DUALMIND_EMBED_DIM: "128", DUALMIND_EMBED_MODEL: "dualmind-hash-v1-128" } : { DUALMIND_EMBED_DIM: undefined, DUALMIND_EMBED_MODEL: undefined });
            handle = openStore({ store: "p" });
            break;
          case "reembed":
            if (readActiveFingerprintId({ handle })) startReembed({ handle, configured: await getEmbedder().fingerprint, onlyStale: false, actor: "test" });
            break;
        }
        await expectCountersMatch(handle, `${step}:${op}`);
      }
      // Drain everything: a finished re-embed switches models (the recount trigger), and the status is healthy.
      retryParkedEmbeddings({ handle, actor: "test" });
      const configured = await getEmbedder().fingerprint;
      if (readActiveFingerprintId({ handle }) !== configured.id) startReembed({ handle, configured, onlyStale: false, actor: "test" });
      for (let i = 0; i < 200 && (await processEmbedBatch({ handle, batchSize: 32 })).claimed > 0; i++);
      await expectCountersMatch(handle, "drained");
      const status = await getStoreStatus({ handle });
      expect(status).toMatchObject({ state: "healthy", backlog: { pending: 0, parked: 0 }, drift: { modelChanged: false, stale: 0, missing: 0 } });
    });
  }
});
