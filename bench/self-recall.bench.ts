/**
 * Self-recall (lib/eval) measured beside the search-quality bench, in one run:
 * 1. agreement: a fresh store of a pinned README sample (bench/known-items.ts,
 *    seed 2026; the bench's documents, its query sentences cut out) — the
 *    bench's document-level figures for the default mode beside the store's
 *    own self-recall of its documents (probes drawn from what it holds);
 * 2. a model change: the same store re-embedded with a smaller builtin model
 *    (held, so the shadow is measured before the switch), then switched;
 * 3. a tokenizer change: the chunk full-text index rebuilt with the tokenizer
 *    it had before drizzle/index/0009_fts_stemming.sql (unicode61, no stemming), then back;
 * 4. cost: the evaluation's time on a synthesized store of BENCH_SELF_RECALL_CHUNKS chunks.
 * BENCH_SELF_RECALL_PARTS=agreement,model,tokenizer,cost runs only the parts named;
 * BENCH_SELF_RECALL_UNCUT=1 indexes the pinned documents whole. `npm run bench -- self-recall`.
 */
import fs from "node:fs";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { getStoreDb } from "../lib/db/connection";
import { resetEmbedderForTests } from "../lib/embed/model";
import { drainEmbedQueues } from "../lib/embed/worker";
import { getSelfRecall, startEvaluation, checkSwitchGate } from "../lib/eval/self-recall";
import { runFtsRebuild } from "../lib/index/fts-rebuild";
import { ingestDocument } from "../lib/index/ingest";
import { embeddingsBackend } from "../lib/stores/embeddings-backend";
import { registerEmbeddableKinds } from "../lib/embeddable-kinds";
import { buildKnownItemSet, loadPinnedSample, parseManifest } from "./known-items";
import { loadTextWindows } from "./corpus";
import { dualmindEngine, evaluateDocEngine, prepareCorpus, scratchStore, writeCorpusFiles } from "./search-eval";
import { printTable } from "./table";

const parts = new Set((process.env.BENCH_SELF_RECALL_PARTS ?? "agreement,model,tokenizer,cost").split(","));
/**
 * BENCH_SELF_RECALL_UNCUT=1: index the pinned documents whole (the sentences
 * the bench asks about stay in the index, as they do in a store asking itself),
 * so the bench's queries and the store's own probes meet the same content.
 */
const UNCUT = process.env.BENCH_SELF_RECALL_UNCUT === "1";
const SEED = 2026;
const QUERIES = 300;
const f = (x: number | null | undefined) => (x === null || x === undefined ? "-" : x.toFixed(3));

type Row = Record<string, string | number>;

async function selfRecall(store: string, label: string, input: { target?: "active" | "shadow"; per_kind?: number } = {}): Promise<Row> {
  const started = performance.now();
  const job = await startEvaluation({ store, actor: "system:bench", input: { per_kind: QUERIES, seed: SEED, ...input }, wait: true });
  if (job.status !== "succeeded") throw new Error(`${label}: ${job.error}`);
  const run = (await getSelfRecall({ store, limit: 2 })).trend.at(-1)!;
  const full = input.target === "shadow" ? null : (await getSelfRecall({ store, limit: 1 })).latest;
  const doc = full?.results.by_kind.document;
  return {
    measure: label,
    model: run.model,
    "hybrid hit@1": f(doc?.hybrid?.hit1),
    "hybrid hit@10": f(doc?.hybrid?.hit10),
    "hybrid MRR@10": f(doc?.hybrid?.mrr10),
    "fts MRR@10": f(doc?.fts?.mrr10),
    "vector MRR@10": f(doc?.vector?.mrr10),
    "knn MRR@10 (gate)": input.target === "shadow" ? f(run.mrr10) : f(full?.results.gate?.mrr10),
    noise: `±${f(input.target === "shadow" ? run.noise : doc?.hybrid?.noise)}`,
    changed: run.change.join("; ") || "-",
    seconds: ((performance.now() - started) / 1000).toFixed(1),
  };
}

export default async function main(): Promise<void> {
  registerEmbeddableKinds();
  const root = path.resolve("node_modules");
  const manifest = parseManifest(fs.readFileSync(path.join(__dirname, "known-items-manifest.tsv"), "utf8"));
  const rows: Row[] = [];
  const store = "known";
  if (parts.has("agreement") || parts.has("model") || parts.has("tokenizer")) {
    const pinned = loadPinnedSample({ root, manifest, seed: SEED });
    const set = buildKnownItemSet({ docs: pinned.docs, count: QUERIES, seed: SEED });
    const files = writeCorpusFiles({ docs: UNCUT ? pinned.docs : set.docs, rootName: "corpus" });
    const corpus = await prepareCorpus({ root: files.root, include: "**/*.md", store });
    try {
      const queries = set.queries.map((q) => ({ ...q, target: `source/corpus/${q.target}` }));
      const bench = await evaluateDocEngine(dualmindEngine({ store, label: "bench", params: {} }), queries);
      const benchFts = await evaluateDocEngine(dualmindEngine({ store, label: "bench fts", params: { mode: "fts" } }), queries);
      const benchVec = await evaluateDocEngine(dualmindEngine({ store, label: "bench vector", params: { mode: "vector" } }), queries);
      rows.push({
        measure: `search-quality bench, seed ${SEED}: ${queries.length} known items (${UNCUT ? "documents indexed whole: the sentences stay in" : "sentences cut out of the index"})`,
        model: "builtin:dualmind-hash-v1",
        "hybrid hit@1": f(bench.hit1),
        "hybrid hit@10": f(bench.hit10),
        "hybrid MRR@10": f(bench.mrr),
        "fts MRR@10": f(benchFts.mrr),
        "vector MRR@10": f(benchVec.mrr),
        "knn MRR@10 (gate)": "-",
        noise: "-",
        changed: "-",
        seconds: "-",
      });
      rows.push(await selfRecall(store, `self-recall of the same store: ${QUERIES} probes per kind drawn from what it holds`));
      if (parts.has("tokenizer")) {
        const handle = getStoreDb({ store });
        const sql = fs.readFileSync(path.resolve("drizzle/index/0009_fts_stemming.sql"), "utf8");
        const apply = (tokenizer: string) => {
          for (const statement of sql.replaceAll("porter unicode61 remove_diacritics 2", tokenizer).split("--> statement-breakpoint")) handle.sqlite.exec(statement);
        };
        apply("unicode61 remove_diacritics 2");
        await runFtsRebuild({ handle });
        rows.push(await selfRecall(store, "after a tokenizer change: chunks re-indexed unstemmed (unicode61), as before 0009"));
        apply("porter unicode61 remove_diacritics 2");
        await runFtsRebuild({ handle });
        rows.push(await selfRecall(store, "tokenizer back to porter (0009)"));
      }
      if (parts.has("model")) {
        Object.assign(process.env, { DUALMIND_EMBED_DIM: "64", DUALMIND_EMBED_MODEL: "hash-64" });
        resetConfigForTests();
        resetEmbedderForTests();
        const configured = await (await import("../lib/embed/model")).getEmbedder().fingerprint;
        await embeddingsBackend().startReembed({ store, configured, onlyStale: false, holdSwitch: true, actor: "system:bench" });
        await drainEmbedQueues({ stores: [store], batchSize: 256 });
        rows.push(await selfRecall(store, "shadow: a smaller builtin model (64 dims), held re-embed, before the switch", { target: "shadow" }));
        let gate: string;
        try {
          gate = JSON.stringify(await checkSwitchGate({ store, actor: "system:bench", tokenLabel: "bench" }));
        } catch (e) {
          gate = `refused: ${(e as Error).message}`;
        }
        console.log(`switch gate without an override: ${gate}`);
        const g = await checkSwitchGate({ store, actor: "system:bench", tokenLabel: "bench", override: "bench: measuring the switch" }).catch((e: Error) => e.message);
        await embeddingsBackend().switchHeldReembed({ store, actor: "system:bench", gate: typeof g === "string" ? { verdict: "unmeasured", reason: g, before: null, after: null, noise: null, override_id: null } : g });
        rows.push(await selfRecall(store, "after the switch to the 64-dim model"));
      }
    } finally {
      corpus.cleanup();
      files.remove();
    }
  }
  printTable(`Self-recall beside the search-quality bench (pinned sample seed ${SEED}, 500 node_modules READMEs)`, rows);
  if (parts.has("cost")) {
    const chunks = Number(process.env.BENCH_SELF_RECALL_CHUNKS ?? 20000);
    const scratch = scratchStore({ store: "big" });
    try {
      const handle = getStoreDb({ store: "big" });
      const windows = loadTextWindows(chunks, root);
      const perDoc = 10;
      for (let i = 0; i * perDoc < windows.length; i++) ingestDocument({ handle, path: `notes/${i}.md`, text: windows.slice(i * perDoc, (i + 1) * perDoc).join("\n\n"), origin: "api", mtime: Date.now() });
      await drainEmbedQueues({ stores: ["big"], batchSize: 256 });
      const n = (getStoreDb({ store: "big" }).sqlite.prepare("select count(*) as n from chunks").get() as { n: number }).n;
      const cost: Row[] = [];
      for (const perKind of [100, 300]) {
        const cpu = process.cpuUsage();
        const r = await selfRecall("big", `${n} chunks, ${perKind} probes per kind`, { per_kind: perKind });
        const used = process.cpuUsage(cpu);
        cost.push({ ...r, "CPU s": ((used.user + used.system) / 1e6).toFixed(1) });
      }
      printTable(`Self-recall cost on a synthesized store (${n} chunks)`, cost);
    } finally {
      scratch.cleanup();
    }
  }
}

