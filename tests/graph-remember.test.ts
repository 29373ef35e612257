import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getStoreDb, type StoreHandle } from "@/lib/db/connection";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { drainEmbedQueues } from "@/lib/embed/worker";
import { linkEvidence } from "@/lib/graph/evidence";
import { createFrame } from "@/lib/graph/frames";
import { createNode } from "@/lib/graph/nodes";
import { createOrMergeRelation } from "@/lib/graph/relations";
import { rememberByQuery, type RememberResult } from "@/lib/graph/remember";
import { thinkThought } from "@/lib/graph/thoughts";
import { createStore } from "@/lib/stores/stores";
import { useTempDataDir } from "./helpers";

let env: ReturnType<typeof useTempDataDir>;

function setup(tempDir: ReturnType<typeof useTempDataDir>) {
  env = tempDir;
  resetEmbedderForTests();
  createStore({ input: { name: "ops" }, actor: "test" });
}
afterEach(() => {
  env.cleanup();
  resetEmbedderForTests();
});

/** A small ops graph: nginx (with frames and evidence), certbot linked strongly, grafana linked weakly. */
function seedOps(handle: StoreHandle) {
  const t = (content: string, framework: "debug" | "build" | "conversation" = "conversation", timestamp?: number) => thinkThought({ handle, input: { content, framework, timestamp }, actor: "seed" });
  const sawBadGateway = t("nginx returned 502 bad gateway right after the certificate renewal", "debug", 1_790_000_000_000);
  const reloadFix = t("reloading nginx picked up the renewed certificate and fixed the 502", "build", 1_790_000_100_000);
  t("grafana dashboards load slowly on monday mornings", "conversation", 1_789_000_000_000);
  const nginx = createNode({ handle, input: { name: "nginx", entity_type: "system", tags: ["proxy"] }, actor: "seed" });
  const certbot = createNode({ handle, input: { name: "certbot", entity_type: "tool" }, actor: "seed" });
  const grafana = createNode({ handle, input: { name: "grafana", entity_type: "system" }, actor: "seed" });
  const semantic = createFrame({ handle, input: { node_id: nginx.id, column: "semantic", properties: { role: "reverse proxy", status: "healthy" } }, actor: "seed" });
  const procedural = createFrame({ handle, input: { node_id: nginx.id, column: "procedural", properties: { steps: "renew the certificate then reload nginx" } }, actor: "seed" });
  createFrame({ handle, input: { node_id: nginx.id, column: "episodic", properties: { incident: "502 after renewal" } }, actor: "seed" });
  linkEvidence({ handle, input: { target: "frame", target_id: semantic.id, thought_id: sawBadGateway.id }, actor: "seed" });
  linkEvidence({ handle, input: { target: "frame", target_id: procedural.id, thought_id: reloadFix.id }, actor: "seed" });
  const renews = createOrMergeRelation({ handle, input: { from_id: certbot.id, to_id: nginx.id, relationship_type: "renews certificates for", weight: 0.8, confidence: 0.9 }, actor: "seed" }).relation;
  linkEvidence({ handle, input: { target: "relation", target_id: renews.id, thought_id: reloadFix.id }, actor: "seed" });
  createOrMergeRelation({ handle, input: { from_id: nginx.id, to_id: grafana.id, relationship_type: "proxies", weight: 0.3 }, actor: "seed" });
  return { nginx, certbot, grafana, sawBadGateway, reloadFix, semantic, renews };
}

const find = (results: RememberResult[], id: string) => results.find((r) => r.id === id);

describe("remember", () => {
  beforeEach(() => setup(useTempDataDir()));

  it("fuses thoughts and nodes with a score breakdown and evidence, and answers the same way every time", async () => {
    const handle = getStoreDb("ops");
    const s = seedOps(handle);
    await drainEmbedQueues({ stores: ["ops"] });
    const input = { query: "nginx certificate renewal reload" };
    const first = await rememberByQuery({ handle, core: null, input });
    const second = await rememberByQuery({ handle, core: null, input });
    expect(second).toEqual(first);
    expect(first.mode).toBe("vector+fts");
    expect(first.fallback).toBeNull();
    expect(first.weights).toEqual({ semantic: 1, episodic: 0.05, procedural: 0.05, relation: 0.1, conflict: 0.5 });
    const nginx = find(first.results, s.nginx.id)!;
    expect(nginx).toMatchObject({ kind: "node", store: "ops", title: "nginx", entity_type: "system" });
    expect(nginx.evidence_thought_ids).toEqual([s.sawBadGateway.id, s.reloadFix.id].sort());
    expect(nginx.breakdown.procedure_match).toBeGreaterThan(0.5);
    expect(nginx.breakdown.semantic_source).toBe("vector");
    const t = nginx.breakdown.terms;
    expect(nginx.score).toBeCloseTo(t.semantic + t.episodic + t.procedural + t.relation + t.conflict, 5);
    const thought = find(first.results, s.reloadFix.id)!;
    expect(thought.evidence_thought_ids).toEqual([s.reloadFix.id]);
    expect(thought.matched_by).toEqual(expect.arrayContaining(["thought_fts", "thought_knn"]));
    // The grafana thought shares no words with the query: it ranks below both.
    const scores = first.results.map((r) => r.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    // A per-request weight override changes the ranking signal it names, and is echoed back.
    const noSemantic = await rememberByQuery({ handle, core: null, input: { ...input, weights: { semantic: 0 } } });
    expect(noSemantic.weights.semantic).toBe(0);
    expect(find(noSemantic.results, s.nginx.id)!.breakdown.terms.semantic).toBe(0);
  });

  it("expands one hop over strong edges: a neighbour comes in with its edge weight, a weak edge does not", async () => {
    const handle = getStoreDb("ops");
    const s = seedOps(handle);
    await drainEmbedQueues({ stores: ["ops"] });
    const r = await rememberByQuery({ handle, core: null, input: { query: "nginx", kinds: ["node"], candidates: 1 } });
    expect(r.results.map((x) => x.id)).toEqual([s.nginx.id, s.certbot.id]);
    const certbot = r.results[1];
    expect(certbot.matched_by).toEqual(["expansion"]);
    expect(certbot.breakdown.edge_weight).toBe(0.8);
    expect(certbot.breakdown.terms.relation).toBeCloseTo(0.08, 6);
    expect(certbot.via).toEqual({ relation_id: s.renews.id, relationship_type: "renews_certificates_for", from_node_id: s.nginx.id, weight: 0.8 });
    // The relation's evidence comes with the neighbour.
    expect(certbot.evidence_thought_ids).toEqual([s.reloadFix.id]);
    // Lower the threshold and the weak edge (0.3) brings grafana too.
    const wide = await rememberByQuery({ handle, core: null, input: { query: "nginx", kinds: ["node"], candidates: 1, min_edge_weight: 0.2 } });
    expect(find(wide.results, s.grafana.id)?.breakdown.edge_weight).toBe(0.3);
  });

  it("penalizes a node whose frames disagree or whose evidence contradicts it", async () => {
    const handle = getStoreDb("ops");
    const a = createNode({ handle, input: { name: "payments api", entity_type: "system" }, actor: "t" });
    const b = createNode({ handle, input: { name: "payments api", entity_type: "tool" }, actor: "t" });
    createFrame({ handle, input: { node_id: a.id, column: "semantic", properties: { status: "up" } }, actor: "t" });
    createFrame({ handle, input: { node_id: b.id, column: "semantic", properties: { status: "up" } }, actor: "t" });
    await drainEmbedQueues({ stores: ["ops"] });
    const before = await rememberByQuery({ handle, core: null, input: { query: "payments api", kinds: ["node"] } });
    const [winner, loser] = before.results;
    expect(winner.breakdown.inconsistency).toBe(0);
    // The winner learns something that contradicts what it knew: opposite values for the same property.
    createFrame({ handle, input: { node_id: winner.id, column: "semantic", properties: { status: "down" } }, actor: "t" });
    const after = await rememberByQuery({ handle, core: null, input: { query: "payments api", kinds: ["node"] } });
    const penalized = find(after.results, winner.id)!;
    expect(penalized.breakdown.inconsistency).toBe(1);
    expect(penalized.breakdown.terms.conflict).toBe(-0.5);
    expect(after.results.map((r) => r.id)).toEqual([loser.id, winner.id]);
    // A thought flagged as contradicting the other node's frame penalizes it too.
    const thought = thinkThought({ handle, input: { content: "payments api was down all night" }, actor: "t" });
    const frameOfLoser = handle.sqlite.prepare("select id from kg_frame where node_id = ?").get(loser.id) as { id: string };
    linkEvidence({ handle, input: { target: "frame", target_id: frameOfLoser.id, thought_id: thought.id, stance: "contradicts" }, actor: "t" });
    const flagged = await rememberByQuery({ handle, core: null, input: { query: "payments api", kinds: ["node"] } });
    expect(find(flagged.results, loser.id)!.breakdown.inconsistency).toBe(0.5);
  });

  it("merges core read-only: core results are marked, a shared entity is deduped, and core is never written", async () => {
    const handle = getStoreDb("ops");
    seedOps(handle);
    const core = getStoreDb("core");
    const pref = thinkThought({ handle: core, input: { content: "the user prefers dark mode in every dashboard" }, actor: "seed" });
    const darkMode = createNode({ handle: core, input: { name: "dark mode", entity_type: "concept" }, actor: "seed" });
    const coreNginx = createNode({ handle: core, input: { name: "nginx", entity_type: "system" }, actor: "seed" });
    await drainEmbedQueues({ stores: ["ops", "core"] });
    const snapshot = () =>
      JSON.stringify(["thoughts", "kg_node", "kg_frame", "kg_relation", "embeddings", "embed_queue", "meta"].map((t) => core.sqlite.prepare(`select * from ${t} order by rowid`).all()));
    const before = snapshot();

    const without = await rememberByQuery({ handle, core: null, input: { query: "dark mode dashboard nginx" } });
    expect(without.results.every((r) => r.store === "ops")).toBe(true);
    const withCore = await rememberByQuery({ handle, core, input: { query: "dark mode dashboard nginx", include_core: true } });
    expect(withCore.include_core).toBe(true);
    expect(find(withCore.results, pref.id)).toMatchObject({ store: "core", kind: "thought" });
    expect(find(withCore.results, darkMode.id)).toMatchObject({ store: "core", kind: "node" });
    // nginx exists in both: the store's copy answers and says core knows it too.
    expect(find(withCore.results, coreNginx.id)).toBeUndefined();
    expect(withCore.results.find((r) => r.title === "nginx")).toMatchObject({ store: "ops", also_in_core: true });
    expect(snapshot()).toBe(before);
  });
});

describe("remember without usable vectors", () => {
  beforeEach(() => setup(useTempDataDir({ DUALMIND_EMBED_BACKLOG_WATERMARK: "1" })));

  it("answers lexically and says why", async () => {
    // Watermark 1: the seeded items wait in the queue, so the store is degraded.
    const handle = getStoreDb("ops");
    const s = seedOps(handle);
    const r = await rememberByQuery({ handle, core: null, input: { query: "certificate renewal" } });
    expect(r.mode).toBe("fts");
    expect(r.fallback).toMatchObject({ reason: "backlog" });
    expect(r.results[0].id).toBe(s.sawBadGateway.id);
    expect(r.results[0].breakdown).toMatchObject({ semantic: 1, semantic_source: "lexical" });
  });
});
