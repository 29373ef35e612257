import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governance } from "@/lib/backend/governance";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { drainEmbeddings, governanceSql, onPg, seedDocument, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";

/**
 * The embed worker records a provenance fact per vector (`system:embed-worker`):
 * when a vector is replaced (its document rewritten) or its chunk goes, its
 * fact goes too, so rewriting one document does not grow the ledger without
 * end, and what a reviewer sees for a vector is its current provenance.
 */
let env: TestEnv;
const store = "churn";

beforeAll(async () => {
  env = await useTestBackend();
  resetEmbedderForTests();
  await seedStore(store);
});
afterAll(async () => env?.cleanup());

const doc = (k: number, lines: number) => Array.from({ length: lines }, (_, j) => `version ${k} line ${j}: the ${k % 2 ? "kiwi" : "fern"} grows by the ${j % 7} stones of the river`).join("\n\n");
const facts = async () => (await governanceSql<{ n: unknown }>("select count(*) as n from provenance where store = ? and recorded_by = ?", [store, "system:embed-worker"]))[0].n;
const workerBytes = async () => Number((await governanceSql<{ bytes: unknown }>("select bytes from agent_ledger_usage where agent_id = ?", ["system:embed-worker"]))[0]?.bytes ?? 0);
const vectors = async () => Number((await storeSql<{ n: unknown }>(store, onPg ? "select count(*) as n from chunk_embeddings" : "select count(*) as n from embeddings where kind = 'chunk'"))[0].n);

describe("the provenance of replaced vectors is retired", () => {
  it("rewriting one document N times leaves as many embed facts as current vectors, each the vector's own", async () => {
    const N = 8;
    let firstBytes = 0;
    for (let k = 0; k < N; k++) {
      await seedDocument(store, "one.md", doc(k, 120));
      await drainEmbeddings([store]);
      if (k === 0) firstBytes = await workerBytes();
    }
    const current = await vectors();
    expect(current).toBeGreaterThan(3);
    expect(Number(await facts())).toBe(current);
    // The embed worker's account in the ledger stays what one version's facts take.
    expect(await workerBytes()).toBeLessThanOrEqual(firstBytes * 1.2);

    // A reviewer looking at a current vector sees its fact: the model and the hash of the text it was made from.
    const [chunk] = await storeSql<{ id: unknown; hash: string }>(store, "select id, chunk_sha256 as hash from chunks order by id limit 1");
    const proofs = await governance().getProofsByArtifact({ input: { artifact_type: "chunk_vector", artifact_id: String(chunk.id), store } });
    expect(proofs.provenance.map((p) => p.input_hash)).toEqual([chunk.hash]);

    // A shorter rewrite drops chunks: their facts go with their vectors.
    await seedDocument(store, "one.md", doc(N, 3));
    await drainEmbeddings([store]);
    expect(Number(await facts())).toBe(await vectors());
  }, 180_000);
});
