import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as evaluateRoute from "@/app/api/v1/stores/[store]/evaluate/route";
import * as evaluateJobRoute from "@/app/api/v1/stores/[store]/evaluate/jobs/[id]/route";
import * as reembedRoute from "@/app/api/v1/stores/[store]/reembed/route";
import * as switchRoute from "@/app/api/v1/stores/[store]/reembed/switch/route";
import { resetEmbedderForTests } from "@/lib/embed/model";
import { renderPrometheusMetrics } from "@/lib/metrics/prometheus";
import { reportModelMismatches } from "@/lib/eval/model-check";
import { changeBetween, getSelfRecall, startDueEvaluations, startEvaluation } from "@/lib/eval/self-recall";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { SelfRecallCard } from "@/components/self-recall-card";
import { AppRouterContext } from "next/dist/shared/lib/app-router-context.shared-runtime";
import { poolScores, scoreOf } from "@/lib/eval/score";
import { stores } from "@/lib/stores/backend";
import * as archiveRoute from "@/app/api/v1/stores/[store]/archive/route";
import type { SelfRecallRun } from "@/lib/eval/report";
import { drawProbes, PROBE_KINDS, probeSetStaleReason, contentFingerprint, type ProbeKind, type ProbeSource } from "@/lib/eval/probes";
import { asAnotherReplica, drainEmbeddings, governanceSql, onPg, storeSql, seedStore, seedThought, seedTrace, useTestBackend, type TestEnv } from "./backend";
import { startFakeOpenAI } from "./fixtures/fake-openai-server";
import { callRoute, restartWith } from "./helpers";
import fs from "node:fs";
import path from "node:path";

const TOKEN = "bootstrap-token-for-self-recall-0123456789";
const params = { store: "notes" };

const TOPICS = [
  ["nginx", "certificate", "proxy", "handshake", "upstream"],
  ["postgres", "vacuum", "autovacuum", "tablespace", "replication"],
  ["sourdough", "starter", "flour", "proofing", "crust"],
  ["aperture", "shutter", "exposure", "lens", "sensor"],
  ["kubernetes", "pod", "scheduler", "kubelet", "namespace"],
  ["violin", "bow", "rosin", "fingerboard", "vibrato"],
  ["glacier", "moraine", "crevasse", "icefall", "firn"],
  ["compiler", "parser", "bytecode", "register", "inlining"],
  ["orchid", "repotting", "humidity", "bark", "aerial"],
  ["mortgage", "amortization", "escrow", "refinance", "principal"],
  ["telescope", "eyepiece", "collimation", "nebula", "mount"],
  ["beekeeping", "hive", "queen", "brood", "smoker"],
  ["marathon", "tempo", "cadence", "taper", "hydration"],
  ["espresso", "portafilter", "tamping", "crema", "grinder"],
  ["chess", "gambit", "endgame", "castling", "zugzwang"],
  ["sailing", "jib", "tacking", "mainsheet", "keel"],
];
const FILLER = ["the", "team", "always", "checks", "before", "after", "every", "morning", "carefully", "notes", "which", "step", "matters", "most", "when", "things", "change"];

/** A document of four sentences on one topic: its words, some filler, in an order fixed by the topic and sentence numbers. */
function topicDocument(t: number): string {
  const words = TOPICS[t];
  const sentences = [0, 1, 2, 3].map((s) => {
    const parts = Array.from({ length: 11 }, (_, i) => (i % 2 === 0 ? words[(i + s + t) % words.length] : FILLER[(i * 3 + s * 5 + t) % FILLER.length]));
    return `${parts.join(" ")}.`;
  });
  return `# ${words[0]} notes\n\n${sentences.join(" ")}\n`;
}

/** The first `n` topics' documents in store notes, in one ingest (one transaction). */
async function seedTopics(n: number): Promise<void> {
  await stores().putDocuments({ store: "notes", input: { documents: TOPICS.slice(0, n).map((words, t) => ({ path: `topics/${words[0]}.md`, content: topicDocument(t) })) }, actor: "test" });
}

async function evaluate(body: Record<string, unknown> = {}) {
  const started = await callRoute(evaluateRoute.POST, { token: TOKEN, params, body });
  expect(started.status).toBe(202);
  const id = started.json.job.id as string;
  for (;;) {
    const r = await callRoute(evaluateJobRoute.GET, { token: TOKEN, params: { ...params, id } });
    expect(r.status).toBe(200);
    if (r.json.job.status !== "running") return r.json.job;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function report() {
  const r = await callRoute(evaluateRoute.GET, { token: TOKEN, params });
  expect(r.status).toBe(200);
  return r.json;
}

describe("self-recall probes", () => {
  const candidates = (n: number) =>
    Object.fromEntries(PROBE_KINDS.map((k) => [k, k === "document" ? Array.from({ length: n }, (_, i) => ({ key: `doc/${i}.md`, hash: `h${i}` })) : []])) as Record<ProbeKind, { key: string; hash: string }[]>;
  const read = async (kind: ProbeKind, keys: string[]): Promise<ProbeSource[]> => keys.map((key) => ({ kind, key, hash: `h${key.match(/\d+/)![0]}`, texts: [topicDocument(Number(key.match(/\d+/)![0]) % TOPICS.length)] }));

  it("are the same for the same content and seed, and another seed draws others", async () => {
    const a = await drawProbes({ candidates: candidates(16), read, seed: 7, perKind: 8 });
    const b = await drawProbes({ candidates: candidates(16), read, seed: 7, perKind: 8 });
    expect(a).toHaveLength(8);
    expect(b).toEqual(a);
    // The order the items are listed in does not matter: they are sorted before the seeded shuffle.
    const reversed = candidates(16);
    reversed.document.reverse();
    expect(await drawProbes({ candidates: reversed, read, seed: 7, perKind: 8 })).toEqual(a);
    const c = await drawProbes({ candidates: candidates(16), read, seed: 8, perKind: 8 });
    expect(c).not.toEqual(a);
    // A probe is part of a sentence of its document, a third of its words dropped.
    for (const p of a) {
      const doc = topicDocument(Number(p.target.match(/\d+/)![0]) % TOPICS.length);
      expect(p.q.split(" ").every((w) => doc.includes(w))).toBe(true);
      expect(p.q.split(" ").length).toBeGreaterThanOrEqual(6);
    }
  });

  it("pass over a sentence another document holds too (it would have two right answers)", async () => {
    const first = await drawProbes({ candidates: candidates(4), read, seed: 7, perKind: 4 });
    const sharedOnce = new Set([first[0].target]);
    // The first document's every sentence is shared: it gives no probe, the others still do.
    const probes = await drawProbes({ candidates: candidates(4), read, seed: 7, perKind: 4, shared: async (_s, key) => sharedOnce.has(key) });
    expect(probes.map((p) => p.target)).not.toContain(first[0].target);
    expect(probes).toHaveLength(3);
  });

  it("are drawn again when the content moved a lot, not for a small change", async () => {
    const probes = await drawProbes({ candidates: candidates(16), read, seed: 7, perKind: 8 });
    const set = { generatorVersion: 1, seed: 7, content: contentFingerprint(candidates(16)), probes };
    const same = (p: { targetHash: string }) => p.targetHash;
    expect(probeSetStaleReason({ set, now: contentFingerprint(candidates(17)), currentHashes: same, seed: 7 })).toBeNull();
    expect(probeSetStaleReason({ set, now: contentFingerprint(candidates(24)), currentHashes: same, seed: 7 })).toMatch(/document count moved from 16 to 24/);
    expect(probeSetStaleReason({ set, now: contentFingerprint(candidates(16)), currentHashes: () => "changed", seed: 7 })).toMatch(/8 of 8 probe targets changed/);
    expect(probeSetStaleReason({ set, now: contentFingerprint(candidates(16)), currentHashes: same, seed: 9 })).toMatch(/another seed/);
  });
});

describe("what moved between two runs", () => {
  const run = (over: { fingerprintId?: string; model?: string; tokenizer?: string; probeSetId?: number }) =>
    ({
      fingerprint_id: over.fingerprintId ?? "a",
      model: over.model ?? "builtin:x",
      probe_set_id: over.probeSetId ?? 1,
      settings: { search: { default_mode: "hybrid", group: "document", chunking_version: 1, fusion_weights: { fts: 1, vec: 0.2 }, tokenizer: over.tokenizer ?? "porter unicode61 remove_diacritics 2" } },
    }) as unknown as SelfRecallRun;
  it("names a model change, a tokenizer change and probes drawn again", () => {
    expect(changeBetween(undefined, run({}))).toEqual([]);
    expect(changeBetween(run({}), run({}))).toEqual([]);
    expect(changeBetween(run({}), run({ fingerprintId: "b", model: "openai:y" }))).toEqual(["model builtin:x → openai:y"]);
    expect(changeBetween(run({}), run({ tokenizer: "unicode61 remove_diacritics 2" }))).toEqual(["full-text tokenizer porter unicode61 remove_diacritics 2 → unicode61 remove_diacritics 2"]);
    expect(changeBetween(run({}), run({ probeSetId: 2 }))).toEqual(["probes drawn again (the content changed)"]);
  });
});

describe("self-recall of a store, and the model switch it gates", () => {
  let env: TestEnv;
  let poor: Awaited<ReturnType<typeof startFakeOpenAI>>;
  beforeAll(async () => {
    poor = await startFakeOpenAI({ dimension: 32 });
    poor.state.poor = true;
  });
  afterAll(async () => {
    await poor.close();
  });
  /** Every topic's document, four traces and four thoughts in store notes, embedded. */
  const seed = async () => {
    await seedStore("notes");
    await seedTopics(TOPICS.length);
    for (let t = 0; t < 4; t++) {
      await seedTrace("notes", { intent: { verb: "fix", target: `${TOPICS[t][0]} ${TOPICS[t][1]}` }, shard_type: "ops", key_files: [], outcome: "success", key_issue: `the ${TOPICS[t][2]} ${TOPICS[t][3]} was wrong`, error_tags: [] });
      await seedThought("notes", { content: `Thinking about ${TOPICS[t].join(" ")} and why the ${TOPICS[t][4]} matters here`, framework: "conversation" });
    }
    await drainEmbeddings(["notes"]);
  };
  beforeEach(async () => {
    env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN }, { seed });
  });
  afterEach(async () => {
    restartWith({ DUALMIND_EMBED_PROVIDER: undefined, DUALMIND_EMBED_MODEL: undefined, DUALMIND_EMBED_BASE_URL: undefined, DUALMIND_EMBED_DIM: undefined });
    resetEmbedderForTests();
    await env.cleanup();
  });

  it("measures each kind in each mode as an audited job, and a second run asks the same probes", async () => {
    const job = await evaluate({ per_kind: 10 });
    expect(job.status).toBe("succeeded");
    const r = await report();
    const run = r.latest;
    expect(run.target).toBe("active");
    expect(run.model).toBe("builtin:dualmind-hash-v1");
    expect(Object.keys(run.results.by_kind).sort()).toEqual(["document", "thought", "trace"]);
    expect(Object.keys(run.results.by_kind.document).sort()).toEqual(["fts", "hybrid", "knn", "vector"]);
    expect(run.results.by_kind.document.hybrid.probes).toBe(10);
    // Distinct topics: the store finds its own documents.
    expect(run.results.by_kind.document.hybrid.hit10).toBe(1);
    expect(run.results.gate.mrr10).toBeGreaterThan(0.8);
    expect(run.hit10).toBeGreaterThan(0.8);
    const again = await evaluate({ per_kind: 10 });
    const second = (await report()).latest;
    expect(second.id).toBe(again.result.run_id);
    expect(second.probe_set_id).toBe(run.probe_set_id);
    expect(second.results.by_kind).toEqual(run.results.by_kind);
    const metrics = await renderPrometheusMetrics({ principal: null });
    expect(metrics.body).toContain('dualmind_store_self_recall_hit10{store="notes"}');
    expect(metrics.body).toMatch(/dualmind_store_self_recall_mrr10\{store="notes"\} 0\.\d+|dualmind_store_self_recall_mrr10\{store="notes"\} 1/);
    const audit = await governanceSql<{ n: number }>("select count(*) as n from audit_log where action = ? and target = ?", ["store.evaluate", "store:notes"]);
    expect(Number(audit[0].n)).toBe(2);
  });

  it("a worse model lowers self-recall; the switch refuses without an override, and the override is in the ledger", async () => {
    await evaluate({ per_kind: 12 });
    const before = (await report()).latest.results.gate.mrr10;
    restartWith({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "poor", DUALMIND_EMBED_BASE_URL: poor.baseUrl, DUALMIND_EMBED_DIM: "32" });
    resetEmbedderForTests();
    // Start-up names both models, their dimensions and the way out.
    const mismatches = (await reportModelMismatches()).filter((m) => m.store === "notes");
    expect(mismatches).toHaveLength(1);
    expect(mismatches[0].active.dimension).toBe(384);
    expect(mismatches[0].configured).toMatchObject({ model: "openai:poor", dimension: 32 });
    expect(mismatches[0].message).toMatch(/\(384 dimensions\); the configured model is openai:poor \(32 dimensions\)/);
    expect(mismatches[0].message).toMatch(/re-embed it .* or set DUALMIND_EMBED_PROVIDER/);
    expect((await callRoute(reembedRoute.POST, { token: TOKEN, params, body: { hold_switch: true } })).status).toBe(202);
    await drainEmbeddings(["notes"]);
    const shadow = await evaluate({ target: "shadow", per_kind: 12 });
    expect(shadow.status).toBe("succeeded");
    const trend = (await report()).trend;
    const shadowPoint = trend.at(-1);
    expect(shadowPoint.target).toBe("shadow");
    expect(shadowPoint.model).toBe("openai:poor");
    expect(shadowPoint.mrr10).toBeLessThan(before - 0.3);
    // Every kind the store holds has its shadow figure, not documents alone.
    const runs = await governanceSql<{ results_json: string; target: string }>("select results_json, target from self_recall_runs order by id");
    for (const r of runs) expect(Object.keys(JSON.parse(r.results_json).by_kind).sort()).toEqual(["document", "thought", "trace"]);
    const shadowKinds = JSON.parse(runs.at(-1)!.results_json).by_kind;
    for (const kind of ["document", "trace", "thought"]) expect(Object.keys(shadowKinds[kind])).toEqual(["knn"]);

    const refused = await callRoute(switchRoute.POST, { token: TOKEN, params });
    expect(refused.status).toBe(409);
    expect(refused.json.error.message).toMatch(/finds the store's own content worse/);
    expect(refused.json.error.message).toMatch(/override/);
    expect(refused.json.error.message).toMatch(/probes of documents, traces, thoughts\)/);

    const sw = await callRoute(switchRoute.POST, { token: TOKEN, params, url: "http://127.0.0.1/x?override_reason=cheaper%20provider%2C%20accepted%20by%20ops" });
    expect(sw.status).toBe(200);
    expect(sw.json.self_recall).toMatchObject({ verdict: "overridden" });
    expect(sw.json.self_recall.before).toBeCloseTo(before, 6);
    const overrides = await governanceSql<{ override_id: string; note: string; actor: string }>("select client_id as override_id, note, actor from overrides");
    expect(overrides).toHaveLength(1);
    expect(overrides[0].override_id).toBe(sw.json.self_recall.override_id);
    expect(overrides[0].note).toMatch(/model switch of store notes to openai:poor despite lower self-recall/);
    expect(overrides[0].note).toMatch(/cheaper provider, accepted by ops/);
    const switched = await governanceSql<{ details: string }>("select details from audit_log where action = ?", ["store.reembed.switch"]);
    // The audit chain records the gate in the spelling its rows have always had.
    expect(JSON.parse(switched[0].details).gate).toMatchObject({ verdict: "overridden", overrideId: sw.json.self_recall.override_id });
  });

  it("a fall beyond the noise after a model change is one health event naming the change", async () => {
    await evaluate({ per_kind: 12 });
    restartWith({ DUALMIND_EMBED_PROVIDER: "openai", DUALMIND_EMBED_MODEL: "poor", DUALMIND_EMBED_BASE_URL: poor.baseUrl, DUALMIND_EMBED_DIM: "32" });
    resetEmbedderForTests();
    // An unheld re-embed switches by itself once every vector is built.
    expect((await callRoute(reembedRoute.POST, { token: TOKEN, params, body: {} })).status).toBe(202);
    await drainEmbeddings(["notes"]);
    await evaluate({ per_kind: 12 });
    const r = await report();
    expect(r.trend.at(-1).change).toContain("model builtin:dualmind-hash-v1 → openai:poor");
    const events = await governanceSql<{ kind: string; status: string; reason: string; store: string }>("select kind, status, reason, store from health_events where kind = ?", ["self_recall"]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: "self_recall", status: "fell", store: "notes" });
    expect(events[0].reason).toMatch(/self-recall fell: MRR@10 .* → .*changed: model builtin:dualmind-hash-v1 → openai:poor/);
    // The same content and model again: no new event.
    await evaluate({ per_kind: 12 });
    expect(await governanceSql("select id from health_events where kind = ?", ["self_recall"])).toHaveLength(1);
  });

  it("an unknown store is a 404 and writes no job", async () => {
    const r = await callRoute(evaluateRoute.POST, { token: TOKEN, params: { store: "nope" }, body: {} });
    expect(r.status).toBe(404);
    expect(await governanceSql("select id from admin_jobs where kind = ?", ["evaluate"])).toHaveLength(0);
    const bad = await callRoute(evaluateRoute.POST, { token: TOKEN, params, body: { per_kind: 100000 } });
    expect(bad.status).toBe(400);
  });

  it("past DUALMIND_MAX_EVALUATIONS running across stores, one more is refused with 429 naming it, and starts once one has finished", async () => {
    const now = Date.now();
    // Two evaluations running elsewhere (other stores, their processes alive: fresh heartbeats).
    for (const store of ["elsewhere-1", "elsewhere-2"]) {
      await governanceSql("insert into admin_jobs (id, kind, store, actor, status, owner, attempts, started_at, heartbeat_at) values (?, 'evaluate', ?, 'user:test', 'running', 'another-process', 1, ?, ?)", [`busy-${store}`, store, now, now]);
    }
    const refused = await callRoute(evaluateRoute.POST, { token: TOKEN, params, body: {} });
    expect(refused.status).toBe(429);
    expect(JSON.stringify(refused.json)).toContain("DUALMIND_MAX_EVALUATIONS");
    await governanceSql("update admin_jobs set status = 'done', finished_at = ? where id = ?", [now, "busy-elsewhere-1"]);
    const started = await callRoute(evaluateRoute.POST, { token: TOKEN, params, body: {} });
    expect(started.status).toBe(202);
    await governanceSql("delete from admin_jobs where id like 'busy-%'");
  });
});

describe("pooled scores", () => {
  it("pool kinds as if their probes were one set", () => {
    const a = [1, 1, 2, 0, 1, 3, 1, 0];
    const b = [0, 0, 1, 5, 2];
    const pooled = poolScores([scoreOf(a)!, scoreOf(b)!])!;
    const whole = scoreOf([...a, ...b])!;
    expect(pooled.probes).toBe(whole.probes);
    expect(pooled.mrr10).toBeCloseTo(whole.mrr10, 12);
    expect(pooled.hit10).toBeCloseTo(whole.hit10, 12);
    expect(pooled.noise).toBeCloseTo(whole.noise, 12);
    expect(poolScores([])).toBeNull();
  });
});

describe("self-recall nobody asked for: after a reindex, every day, paced", () => {
  let env: TestEnv;
  /** Six topics' documents in store notes, embedded. */
  const seed = async () => {
    await seedStore("notes");
    await seedTopics(6);
    await drainEmbeddings(["notes"]);
  };
  beforeEach(async () => {
    env = await useTestBackend({ DUALMIND_BOOTSTRAP_TOKEN: TOKEN, DUALMIND_MAX_EVALUATIONS: "16", DUALMIND_EVALUATE_CPU_SHARE: "0.5" }, { seed });
  });
  afterEach(async () => {
    restartWith({ DUALMIND_EVALUATE_EVERY: undefined, DUALMIND_EVALUATE_CPU_SHARE: undefined, DUALMIND_MAX_EVALUATIONS: undefined });
    await env.cleanup();
  });

  /** Every evaluation running now, to its end. */
  async function settle() {
    await expect.poll(async () => (await governanceSql("select id from admin_jobs where kind = 'evaluate' and status = 'running'")).length).toBe(0);
  }

  it("a store never evaluated runs at the next look, paced; one run per period across replicas, and again when the period has passed", async () => {
    const before = await report();
    expect(before.schedule).toMatchObject({ every: "daily", next_trigger: "scheduled", cpu_share: 0.5, waiting_for: null });
    expect(before.schedule.next_due_at).toBeLessThanOrEqual(Date.now());
    expect(await startDueEvaluations()).toContain("notes");
    // A look while it runs, and a look after it ended — here or on another replica — start nothing.
    expect(await startDueEvaluations()).not.toContain("notes");
    await settle();
    const back = asAnotherReplica();
    try {
      expect(await startDueEvaluations()).not.toContain("notes");
    } finally {
      back();
    }
    const r = await report();
    expect(r.job).toMatchObject({ status: "succeeded", reason: "scheduled", actor: "system:scheduler" });
    expect(r.latest.trigger).toBe("scheduled");
    // Paced to half a core: it paused as long as it worked.
    const cost = r.latest.results.cost;
    expect(cost.cpu_share).toBe(0.5);
    expect(cost.busy_ms).toBeGreaterThan(0);
    expect(Math.abs(cost.paused_ms - cost.busy_ms)).toBeLessThanOrEqual(2);
    expect(r.schedule.next_due_at).toBe(r.job.started_at + 86_400_000);
    // Health's card says why the last run ran and when the next is due, for one store and in the table of all.
    const own = (await getSelfRecall({ store: "notes" })) as Awaited<ReturnType<typeof getSelfRecall>>;
    // The card refreshes itself through the App Router while a job runs: rendered here inside a router that does nothing.
    const render = (reports: (typeof own)[]) =>
      renderToStaticMarkup(createElement(AppRouterContext.Provider, { value: { refresh: () => undefined } as never }, createElement(SelfRecallCard, { reports, isAdmin: false })));
    const card = render([own]).replace(/<[^>]+>/g, "");
    expect(card).toMatch(/\(scheduled\)/);
    expect(card).toMatch(/Last evaluation: succeeded · scheduled · started/);
    expect(card).toMatch(/Next run: scheduled · due .* · paced to 50% of a core/);
    const table = render([own, { ...own, store: "other" }]).replace(/<[^>]+>/g, " ");
    expect(table).toMatch(/Last ran because/);
    expect(table).toMatch(/scheduled\s+scheduled · due/);
    expect(await governanceSql("select id from admin_jobs where kind = 'evaluate' and store = 'notes'")).toHaveLength(1);
    // A day later it is due again.
    await governanceSql("update admin_jobs set started_at = started_at - 86400000 where kind = 'evaluate'");
    expect(await startDueEvaluations()).toContain("notes");
    await settle();
    expect(await governanceSql("select id from admin_jobs where kind = 'evaluate' and store = 'notes'")).toHaveLength(2);
  });

  it("a reindex that changed the store queues a run once its new vectors are built; an on-demand run is not paced", async () => {
    await evaluate({ per_kind: 5 });
    const onDemand = await report();
    expect(onDemand.latest.trigger).toBe("on demand");
    expect(onDemand.latest.results.cost).toMatchObject({ cpu_share: 1, paused_ms: 0 });
    expect(onDemand.job.reason).toBe("on demand");
    // Nothing due: the daily run is a day away.
    expect(await startDueEvaluations()).not.toContain("notes");
    if (onPg) {
      // The memories table is the truth on PostgreSQL: its text changed outside the API, and the reindex rebuilds from it.
      await stores().createMemory({ store: "notes", input: { path: "inbox/espresso", body: "# espresso\n\nfirst draft", tags: [] } as never, actor: "test" });
      await drainEmbeddings(["notes"]);
      await storeSql("notes", "update memories set content = ? where path = ?", [`# espresso\n\n${topicDocument(13)}`, "inbox/espresso"]);
    } else {
      const dir = path.join(env.dataDir, "stores", "notes", "memory", "inbox");
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, "espresso.md"), `# espresso\n\n${topicDocument(13)}`);
    }
    const reindex = await stores().runReindex({ store: "notes", actor: "test" });
    expect(reindex.status).toBe("succeeded");
    const waiting = (await report()).schedule;
    expect(waiting).toMatchObject({ next_trigger: "after reindex", next_due_at: null });
    expect(waiting.waiting_for).toMatch(/vectors/);
    expect(await startDueEvaluations()).not.toContain("notes");
    await drainEmbeddings(["notes"]);
    expect((await report()).schedule).toMatchObject({ next_trigger: "after reindex", waiting_for: null });
    expect(await startDueEvaluations()).toContain("notes");
    await settle();
    const after = await report();
    expect(after.job).toMatchObject({ status: "succeeded", reason: "after reindex" });
    expect(after.latest.trigger).toBe("after reindex");
    expect(after.schedule.next_trigger).toBe("scheduled");
    expect(await startDueEvaluations()).not.toContain("notes");
  });

  it("with DUALMIND_EVALUATE_EVERY=off nothing runs by itself, and Health says so", async () => {
    restartWith({ DUALMIND_EVALUATE_EVERY: "off" });
    expect((await report()).schedule).toMatchObject({ every: "off", next_due_at: null, next_trigger: null });
    expect(await startDueEvaluations()).toEqual([]);
    expect(await governanceSql("select id from admin_jobs where kind = 'evaluate'")).toHaveLength(0);
  });

  it("a store archived while it is evaluated ends the job as cancelled with the reason, and records no run", async () => {
    const archived: { call: Promise<{ status: number }> | null } = { call: null };
    const job = await startEvaluation({
      store: "notes",
      actor: "user:test",
      input: { per_kind: 5 },
      wait: true,
      onProgress: (p) => {
        if (p.phase === "asking" && !archived.call) archived.call = callRoute(archiveRoute.POST, { token: TOKEN, params, url: "http://x/api/v1/stores/notes/archive", method: "POST" });
      },
    });
    expect((await archived.call)?.status).toBe(200);
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/^cancelled: store notes was archived while it was being evaluated/);
    expect(await governanceSql("select id from self_recall_runs")).toHaveLength(0);
    const audit = await governanceSql<{ reason: string }>("select reason from audit_log where action = ?", ["store.evaluate.cancel"]);
    expect(audit[0].reason).toMatch(/archived/);
    // An archived store is not looked at by the scheduler.
    expect(await startDueEvaluations()).not.toContain("notes");
  });

  it("a store deleted while it is evaluated leaves no run behind and an audit row saying the run was cancelled", async () => {
    // PostgreSQL may pick the delete's DROP SCHEMA as a deadlock victim against a search reading the store: a deadlock is retried, as a client would.
    const deleteRetryingDeadlocks = async (): Promise<unknown> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await stores().deleteStore({ name: "notes", actor: "user:test", confirm: "notes" });
        } catch (e) {
          if (attempt >= 5 || !/deadlock/.test(String((e as { cause?: unknown }).cause ?? e))) throw e;
        }
      }
    };
    const deleted: { call: Promise<unknown> | null } = { call: null };
    await startEvaluation({
      store: "notes",
      actor: "user:test",
      input: { per_kind: 5 },
      wait: true,
      onProgress: (p) => {
        if (p.phase === "asking" && !deleted.call) deleted.call = deleteRetryingDeadlocks();
      },
    });
    await deleted.call;
    expect(await governanceSql("select id from self_recall_runs")).toHaveLength(0);
    const audit = await governanceSql<{ reason: string }>("select reason from audit_log where action = ?", ["store.evaluate.cancel"]);
    expect(audit[0].reason).toMatch(/^cancelled: store notes was deleted while it was being evaluated/);
  });
});
