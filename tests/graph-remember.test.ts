import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { graphBackend } from "@/lib/graph/backend";
import type { RememberResult } from "@/lib/graph/remember";
import { drainEmbeddings, seedStore, storeSql, useTestBackend, type TestEnv } from "./backend";

let env: TestEnv;

const seed = () => seedStore("ops");
async function setup(extraEnv: Record<string, string> = {}) {
  env = await useTestBackend(extraEnv, { seed });
}
afterEach(async () => {
  await env.cleanup();
  resetEmbedderForTests();
});

const g = () => graphBackend();

/** A small ops graph: nginx (with frames and evidence), certbot linked strongly, grafana linked weakly. */
async function seedOps(store = "ops") {
  const actor = "seed";
  const t = (content: string, framework: "debug" | "build" | "conversation" = "conversation", timestamp?: number) => g().think({ store, input: { content, framework, timestamp }, actor });
  const sawBadGateway = await t("nginx returned 502 bad gateway right after the certificate renewal", "debug", 1_790_000_000_000);
  const reloadFix = await t("reloading nginx picked up the renewed certificate and fixed the 502", "build", 1_790_000_100_000);
  await t("grafana dashboards load slowly on monday mornings", "conversation", 1_789_000_000_000);
  const nginx = await g().createNode({ store, input: { name: "nginx", entity_type: "system", tags: ["proxy"] }, actor });
  const certbot = await g().createNode({ store, input: { name: "certbot", entity_type: "tool" }, actor });
  const grafana = await g().createNode({ store, input: { name: "grafana", entity_type: "system" }, actor });
  const semantic = await g().createFrame({ store, input: { node_id: nginx.id, column: "semantic", properties: { role: "reverse proxy", status: "healthy" } }, actor });
  const procedural = await g().createFrame({ store, input: { node_id: nginx.id, column: "procedural", properties: { steps: "renew the certificate then reload nginx" } }, actor });
  await g().createFrame({ store, input: { node_id: nginx.id, column: "episodic", properties: { incident: "502 after renewal" } }, actor });
  await g().linkEvidence({ store, input: { target: "frame", target_id: semantic.id, thought_id: sawBadGateway.id }, actor });
  await g().linkEvidence({ store, input: { target: "frame", target_id: procedural.id, thought_id: reloadFix.id }, actor });
  const renews = (await g().createOrMergeRelation({ store, input: { from_id: certbot.id, to_id: nginx.id, relationship_type: "renews certificates for", weight: 0.8, confidence: 0.9 }, actor })).relation;
  await g().linkEvidence({ store, input: { target: "relation", target_id: renews.id, thought_id: reloadFix.id }, actor });
  await g().createOrMergeRelation({ store, input: { from_id: nginx.id, to_id: grafana.id, relationship_type: "proxies", weight: 0.3 }, actor });
  return { nginx, certbot, grafana, sawBadGateway, reloadFix, semantic, renews };
}

const find = (results: RememberResult[], id: string) => results.find((r) => r.id === id);
const remember = (input: Parameters<ReturnType<typeof g>["remember"]>[0]["input"], store = "ops") => g().remember({ store, input });

describe("remember", () => {
  beforeEach(() => setup());

  it("fuses thoughts and nodes with a score breakdown and evidence, and answers the same way every time", async () => {
    const s = await seedOps();
    await drainEmbeddings(["ops"]);
    const input = { query: "nginx certificate renewal reload" };
    const first = await remember(input);
    const second = await remember(input);
    expect(second).toEqual(first);
    expect(first.mode).toBe("vector+fts");
    expect(first.fallback).toBeNull();
    // Every term of the formula is listed with its meaning and its weight, fact_match's too (its weight is the answer's own best score, at least 1).
    expect(first.weights).toEqual({ semantic: 1, episodic: 0.05, procedural: 0.05, relation: 0.1, conflict: 0.5, fact: Math.max(1, ...first.results.map((r: { score: number }) => r.score)) });
    expect(Object.keys(first.signals).sort()).toEqual(["edge_weight", "episodic", "fact_match", "inconsistency", "procedure_match", "recency", "semantic"]);
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
    const noSemantic = await remember({ ...input, weights: { semantic: 0 } });
    expect(noSemantic.weights.semantic).toBe(0);
    expect(find(noSemantic.results, s.nginx.id)!.breakdown.terms.semantic).toBe(0);
  });

  it("expands one hop over strong edges: a neighbour comes in with its edge weight, a weak edge does not", async () => {
    const s = await seedOps();
    await drainEmbeddings(["ops"]);
    const r = await remember({ query: "nginx", kinds: ["node"], candidates: 1 });
    expect(r.results.map((x) => x.id)).toEqual([s.nginx.id, s.certbot.id]);
    const certbot = r.results[1];
    expect(certbot.matched_by).toEqual(["expansion"]);
    expect(certbot.breakdown.edge_weight).toBe(0.8);
    expect(certbot.breakdown.terms.relation).toBeCloseTo(0.08, 6);
    expect(certbot.via).toEqual({ relation_id: s.renews.id, relationship_type: "renews_certificates_for", from_node_id: s.nginx.id, weight: 0.8 });
    // The relation's evidence comes with the neighbour.
    expect(certbot.evidence_thought_ids).toEqual([s.reloadFix.id]);
    // Lower the threshold and the weak edge (0.3) brings grafana too.
    const wide = await remember({ query: "nginx", kinds: ["node"], candidates: 1, min_edge_weight: 0.2 });
    expect(find(wide.results, s.grafana.id)?.breakdown.edge_weight).toBe(0.3);
  });

  it("penalizes a node whose frames disagree or whose evidence contradicts it", async () => {
    const actor = "t";
    const store = "ops";
    const a = await g().createNode({ store, input: { name: "payments api", entity_type: "system" }, actor });
    const b = await g().createNode({ store, input: { name: "payments api", entity_type: "tool" }, actor });
    await g().createFrame({ store, input: { node_id: a.id, column: "semantic", properties: { status: "up" } }, actor });
    await g().createFrame({ store, input: { node_id: b.id, column: "semantic", properties: { status: "up" } }, actor });
    await drainEmbeddings(["ops"]);
    const before = await remember({ query: "payments api", kinds: ["node"] });
    const [winner, loser] = before.results;
    expect(winner.breakdown.inconsistency).toBe(0);
    // The winner learns something that contradicts what it knew: opposite values for the same property.
    await g().createFrame({ store, input: { node_id: winner.id, column: "semantic", properties: { status: "down" } }, actor });
    const after = await remember({ query: "payments api", kinds: ["node"] });
    const penalized = find(after.results, winner.id)!;
    expect(penalized.breakdown.inconsistency).toBe(1);
    expect(penalized.breakdown.terms.conflict).toBe(-0.5);
    expect(after.results.map((r) => r.id)).toEqual([loser.id, winner.id]);
    // A thought flagged as contradicting the other node's frame penalizes it too.
    const thought = await g().think({ store, input: { content: "payments api was down all night" }, actor });
    const [frameOfLoser] = (await g().getNodeDetail({ store, id: loser.id })).frames;
    await g().linkEvidence({ store, input: { target: "frame", target_id: frameOfLoser.id, thought_id: thought.id, stance: "contradicts" }, actor });
    const flagged = await remember({ query: "payments api", kinds: ["node"] });
    expect(find(flagged.results, loser.id)!.breakdown.inconsistency).toBe(0.5);
  });

  it("merges core read-only: core results are marked, a shared entity is deduped, and core is never written", async () => {
    await seedOps();
    const pref = await g().think({ store: "core", input: { content: "the user prefers dark mode in every dashboard" }, actor: "seed" });
    const darkMode = await g().createNode({ store: "core", input: { name: "dark mode", entity_type: "concept" }, actor: "seed" });
    const coreNginx = await g().createNode({ store: "core", input: { name: "nginx", entity_type: "system" }, actor: "seed" });
    await drainEmbeddings(["ops", "core"]);
    const meta = env.backend === "pg" ? "store_meta" : "meta";
    const snapshot = async () =>
      JSON.stringify(
        await Promise.all(
          ["thoughts", "kg_node", "kg_frame", "kg_relation", "embeddings", "embed_queue", meta].map(async (t) => (await storeSql("core", `select * from ${t}`)).map((r) => JSON.stringify(r)).sort()),
        ),
      );
    const before = await snapshot();

    const without = await remember({ query: "dark mode dashboard nginx" });
    expect(without.results.every((r) => r.store === "ops")).toBe(true);
    const withCore = await remember({ query: "dark mode dashboard nginx", include_core: true });
    expect(withCore.include_core).toBe(true);
    expect(find(withCore.results, pref.id)).toMatchObject({ store: "core", kind: "thought" });
    expect(find(withCore.results, darkMode.id)).toMatchObject({ store: "core", kind: "node" });
    // nginx exists in both: the store's copy answers and says core knows it too.
    expect(find(withCore.results, coreNginx.id)).toBeUndefined();
    expect(withCore.results.find((r) => r.title === "nginx")).toMatchObject({ store: "ops", also_in_core: true });
    expect(await snapshot()).toBe(before);
  });
});

describe("remember without usable vectors", () => {
  beforeEach(() => setup({ DUALMIND_EMBED_BACKLOG_WATERMARK: "1" }));

  it("answers lexically and says why", async () => {
    // Watermark 1: the seeded items wait in the queue, so the store is degraded.
    const s = await seedOps();
    // Both nginx thoughts mention the renewed certificate; only one saw the bad gateway. (With the two words alone they
    // nearly tie, and bm25 on SQLite and ts_rank on PostgreSQL, which weighs document length differently, break the tie apart.)
    const r = await remember({ query: "certificate renewal bad gateway" });
    expect(r.mode).toBe("fts");
    expect(r.fallback).toMatchObject({ reason: "backlog" });
    expect(r.results[0].id).toBe(s.sawBadGateway.id);
    expect(r.results[0].breakdown).toMatchObject({ lexical: 1, semantic_source: "lexical" });
    expect(r.results[0].breakdown.semantic).toBeGreaterThanOrEqual(1);
  });
});

describe("remember ranks by the one fusion policy", () => {
  beforeEach(() => setup());

  it("never ranks below its lexical evidence when the builtin vectors mislead", async () => {
    const store = "ops";
    const actor = "t";
    const target = await g().think({ store, input: { content: "run the rollback procedure after a failed deploy", timestamp: 1_790_000_000_000 }, actor });
    // Near-spellings share the query's character n-grams (the builtin vectors' evidence) but none of its words.
    const decoys: { id: string }[] = [];
    for (const [i, text] of ["redeployed unrollbacks subprocedure", "predeploy nonrollback procedureless", "undeploy prerollback subprocedures"].entries()) {
      decoys.push(await g().think({ store, input: { content: text, timestamp: 1_790_000_000_000 + (i + 1) * 3_600_000 }, actor }));
    }
    await drainEmbeddings([store]);
    const query = "rollback procedure deploy";
    const fused = await remember({ query, kinds: ["thought"] });
    expect(fused.mode).toBe("vector+fts");
    expect(fused.results[0].id).toBe(target.id);
    const lexicalOnly = await remember({ query, kinds: ["thought"], w_vec: 0 });
    expect(lexicalOnly.results[0].id).toBe(target.id);
    expect(fused.results[0].confidence).toBe("high");
    // The decoys come only from the vectors: below the hit the words found, each marked low.
    for (const d of fused.results.slice(1)) expect(d.confidence).toBe("low");
    expect(fused.fusion).toMatchObject({ source: "provider", w_vec: 0 });
    expect(fused.fusion.key).toMatch(/^builtin\//);
  });

  it("brings the turn next to the question's words as its context, not one written hours apart", async () => {
    const store = "ops";
    const actor = "t";
    const t0 = 1_790_000_000_000;
    const asked = await g().think({ store, input: { content: "Melanie: what did you paint last weekend?", timestamp: t0 }, actor });
    const answered = await g().think({ store, input: { content: "Caroline: a sunset over the lake, in oils", timestamp: t0 + 30_000 }, actor });
    const later = await g().think({ store, input: { content: "Caroline: the bus was late again", timestamp: t0 + 3 * 3_600_000 }, actor });
    await g().think({ store, input: { content: "Melanie: we booked the camping trip", timestamp: t0 - 5 * 3_600_000 }, actor });
    await drainEmbeddings([store]);
    const r = await remember({ query: "painting last weekend", kinds: ["thought"] });
    expect(r.results[0].id).toBe(asked.id);
    const reply = find(r.results, answered.id)!;
    expect(reply.matched_by).toContain("thought_context");
    expect(reply.breakdown.context).toBeGreaterThan(0);
    expect(find(r.results, later.id)?.matched_by ?? []).not.toContain("thought_context");
  });

  it("reads at most its cap of a hub's edges, the strongest", async () => {
    const store = "ops";
    const actor = "t";
    const hub = await g().createNode({ store, input: { name: "hub", entity_type: "system" }, actor });
    const spokes: { id: string }[] = [];
    for (let i = 0; i < 60; i++) {
      const n = await g().createNode({ store, input: { name: `spoke ${i}`, entity_type: "tool" }, actor });
      await g().createOrMergeRelation({ store, input: { from_id: i % 2 ? hub.id : n.id, to_id: i % 2 ? n.id : hub.id, relationship_type: "links", weight: 0.5 + i / 200 }, actor });
      spokes.push(n);
    }
    const r = await remember({ query: "hub", kinds: ["node"], candidates: 1, limit: 100 });
    const expanded = r.results.filter((x) => x.matched_by.includes("expansion"));
    // Each direction reads at most MAX_EDGES_PER_SEED (25) edges: the strongest 25 of each.
    expect(expanded.length).toBe(50);
    const strongest = new Set([...spokes.keys()].filter((i) => i >= 10).map((i) => spokes[i].id));
    expect(expanded.every((x) => strongest.has(x.id))).toBe(true);
  });

  it("reads at most its cap of a node's frames (the newest) and of each frame's and relation's evidence links (the first by thought id)", async () => {
    const store = "ops";
    const actor = "t";
    const node = await g().createNode({ store, input: { name: "zebrafish", entity_type: "concept" }, actor });
    const friend = await g().createNode({ store, input: { name: "aquarium", entity_type: "concept" }, actor });
    // Four old frames say "up", the eight newest say "down": only the newest MAX_FRAMES_PER_NODE (8) are read, so no conflict.
    const frames: { id: string }[] = [];
    for (let i = 0; i < 12; i++) frames.push(await g().createFrame({ store, input: { node_id: node.id, column: "semantic", properties: { status: i < 4 ? "up" : "down" } }, actor }));
    const relation = (await g().createOrMergeRelation({ store, input: { from_id: friend.id, to_id: node.id, relationship_type: "houses", weight: 0.9 }, actor })).relation;
    const thoughts: string[] = [];
    for (let i = 0; i < 80; i++) {
      const t = await g().think({ store, input: { content: `observation ${i} of the tank` }, actor });
      thoughts.push(t.id);
      await g().linkEvidence({ store, input: { target: "frame", target_id: frames[11].id, thought_id: t.id }, actor });
      await g().linkEvidence({ store, input: { target: "relation", target_id: relation.id, thought_id: t.id }, actor });
    }
    const r = await remember({ query: "zebrafish", kinds: ["node"], candidates: 1 });
    const hit = find(r.results, node.id)!;
    expect(hit.breakdown.inconsistency).toBe(0);
    // The newest frame's first 64 links by thought id (MAX_EVIDENCE_PER_TARGET), not all 80.
    const first64 = [...thoughts].sort().slice(0, 64);
    expect(hit.evidence_thought_ids).toEqual(first64);
    // The neighbour reached over the relation brings the relation's first 64 links too.
    const neighbour = find(r.results, friend.id)!;
    expect(neighbour.matched_by).toContain("expansion");
    expect(neighbour.evidence_thought_ids).toEqual(first64);
  });

  it("says so when the best evidence is weak, and each hit carries its band", async () => {
    await seedOps();
    await drainEmbeddings(["ops"]);
    const weak = await remember({ query: "grafana quantum chromodynamics lattice simulation", kinds: ["thought"] });
    expect(weak.results.length).toBeGreaterThan(0);
    expect(weak.results.every((x) => x.confidence === "low")).toBe(true);
    expect(weak.reason).toEqual({
      code: "weak_match",
      message: `no hit holds even a third of the query's words (grafana, quantum, chromodynamics, lattice, simulation); the ${weak.results.length} hit(s) are the nearest there is, not answers`,
    });
    const strong = await remember({ query: "nginx certificate renewal reload" });
    expect(strong.reason).toBeNull();
    expect(strong.results[0].confidence).toBe("high");
  });
});
