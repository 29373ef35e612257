/**
 * What an agent gets back from its memory, measured on a public
 * conversational benchmark: LoCoMo ("Evaluating Very Long-Term
 * Conversational Memory of LLM Agents", Maharana et al., ACL 2024;
 * snap-research/locomo, data/locomo10.zip). The conversations are read in
 * place from BENCH_LOCOMO_DIR (default ../shared/data/locomo-dev relative to
 * the repository) and never copied.
 *
 * Each turn ("Speaker: text", a shared photo's caption appended) is written
 * as a thought (thinkThought, its session's time as timestamp) and as a
 * one-turn document (ingestDocument), every vector by the real worker
 * (builtin embedder); each question of categories 1–4 (multi-hop, temporal,
 * open-domain, single-hop; 5 has no answer) is asked of remember and of
 * search in each mode, in process through the domain functions, limit 10.
 * Evidence recall@10: the share of a question's evidence turns among the
 * ten answers, averaged over questions; hit@10: at least one among them.
 * The baseline in the same run: raw SQLite FTS5 bm25 (porter, OR of the
 * question's words) over the same turns.
 *
 * Then the recall paraphrase set (recallSet) and the README known-item sets (bench/search-docs.bench.ts's pinned
 * document samples) as default search ÷ raw FTS5 MRR@10. BENCH_MEMORY_PARTS picks parts (comma-separated; default
 * locomo,recall,known-items); `latency` (not in the default) times search's context at its worst (contextLatency).
 */
import fs from "node:fs";
import path from "node:path";
import { ingestDocument } from "../lib/index/ingest";
import { searchInputSchema, searchStore } from "../lib/index/search";
import { sqliteRemember } from "../lib/graph/engines/sqlite";
import { rememberByQuery, rememberInputSchema, type RememberInput } from "../lib/graph/remember";
import { thinkThought } from "../lib/graph/thoughts";
import { drainEmbedQueues } from "../lib/embed/worker";
import { openStore } from "../lib/stores/stores";
import { createStore } from "../lib/stores/stores";
import { rawFts5DocEngine, scratchStore } from "./search-eval";
import { percentile, printTable } from "./table";
import { loadTextWindows } from "./corpus";
import { sqliteRecall } from "../lib/recall/engines/sqlite";
import { recallReflections } from "../lib/recall/recall";
import { recordTrace } from "../lib/recall/traces";
import { getReflectionSettings } from "../lib/recall/settings";
import { QUALITY_CASES } from "../tests/fixtures/recall-quality";

const LOCOMO_DIR = process.env.BENCH_LOCOMO_DIR ?? path.join(__dirname, "..", "..", "shared", "data", "locomo-dev");
const K = 10;
const CATEGORIES: Record<number, string> = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop" };

type Turn = { diaId: string; speaker: string; text: string; time: number };
type Question = { question: string; evidence: string[]; category: number };
export type Conversation = { name: string; turns: Turn[]; questions: Question[] };

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/** "1:56 pm on 8 May, 2023" → epoch ms (UTC). */
export function sessionTime(s: string): number {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(s);
  if (!m) throw new Error(`unreadable session time: ${s}`);
  const hour = (Number(m[1]) % 12) + (m[3].toLowerCase() === "pm" ? 12 : 0);
  return Date.UTC(Number(m[6]), MONTHS.indexOf(m[5].toLowerCase()), Number(m[4]), hour, Number(m[2]));
}

/** The turns and answerable questions of one LoCoMo conversation file. */
export function readConversation(file: string): Conversation {
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown> & { qa: { question: string; evidence?: string[]; category: number }[] };
  const conv = (raw.conversation ?? raw) as Record<string, unknown>;
  const turns: Turn[] = [];
  for (let n = 1; ; n++) {
    const session = conv[`session_${n}`] as { speaker: string; dia_id: string; text: string; blip_caption?: string }[] | undefined;
    if (!session) {
      if (conv[`session_${n}_date_time`] === undefined) break;
      continue;
    }
    const start = sessionTime(String(conv[`session_${n}_date_time`]));
    session.forEach((t, i) => turns.push({ diaId: t.dia_id, speaker: t.speaker, text: `${t.speaker}: ${t.text}${t.blip_caption ? ` [shares a photo: ${t.blip_caption}]` : ""}`, time: start + i * 30_000 }));
  }
  const questions = raw.qa.filter((q) => CATEGORIES[q.category] && (q.evidence?.length ?? 0) > 0).map((q) => ({ question: q.question, evidence: q.evidence!, category: q.category }));
  return { name: path.basename(file, ".json"), turns, questions };
}

export function loadLocomo(dir = LOCOMO_DIR): Conversation[] {
  if (!fs.existsSync(dir)) throw new Error(`LoCoMo data not found at ${dir} (set BENCH_LOCOMO_DIR)`);
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => readConversation(path.join(dir, f)));
}

/** Recall@K of one answer: the share of the evidence among the first K ids. */
function scoreAnswer(got: string[], evidence: string[]): { recall: number; hit: number } {
  const top = new Set(got.slice(0, K));
  const found = evidence.filter((e) => top.has(e)).length;
  return { recall: found / evidence.length, hit: found > 0 ? 1 : 0 };
}

export type Route = { label: string; answer: (q: string) => Promise<string[]> | string[] };

type Tally = { recall: number; hit: number; n: number };
const add = (t: Tally, s: { recall: number; hit: number }) => ((t.recall += s.recall), (t.hit += s.hit), t.n++);

/** Every route over every conversation's questions: evidence recall@10 and hit@10, overall and per category. */
export async function evaluateRoutes(convs: { conv: Conversation; routes: Route[] }[]) {
  const byRoute = new Map<string, { all: Tally; byCat: Map<number, Tally> }>();
  for (const { conv, routes } of convs) {
    for (const route of routes) {
      const t = byRoute.get(route.label) ?? { all: { recall: 0, hit: 0, n: 0 }, byCat: new Map<number, Tally>() };
      byRoute.set(route.label, t);
      for (const q of conv.questions) {
        const s = scoreAnswer(await route.answer(q.question), q.evidence);
        add(t.all, s);
        const c = t.byCat.get(q.category) ?? { recall: 0, hit: 0, n: 0 };
        t.byCat.set(q.category, c);
        add(c, s);
      }
    }
  }
  return byRoute;
}

const REMEMBER_MODES: { label: string; input: Partial<RememberInput> }[] = [
  { label: "remember (default)", input: {} },
  { label: "remember, semantic weight only", input: { weights: { episodic: 0, procedural: 0, relation: 0, conflict: 0 } } },
  { label: "remember, lexical only (w_vec 0)", input: { w_vec: 0 } },
  { label: "remember, w_vec 0.01", input: { w_vec: 0.01 } },
  { label: "remember, w_vec 0.2", input: { w_vec: 0.2 } },
  { label: "remember, w_vec 1 (equal weights)", input: { w_vec: 1 } },
  { label: "remember, recency τ 1 day", input: { tau_hours: 24 } },
];
const SEARCH_MODES: { label: string; params: Record<string, string> }[] = [
  { label: "search fts", params: { mode: "fts" } },
  { label: "search fts, match=any", params: { mode: "fts", match: "any" } },
  { label: "search vector", params: { mode: "vector" } },
  { label: "search hybrid", params: { mode: "hybrid" } },
  { label: "search hybrid, group=chunk", params: { mode: "hybrid", group: "chunk" } },
];

async function locomo(): Promise<void> {
  const convs = loadLocomo();
  const scratch = scratchStore({ store: "locomo-scratch" });
  try {
    const prepared: { conv: Conversation; routes: Route[] }[] = [];
    for (const conv of convs) {
      const store = `locomo-${conv.name}`;
      createStore({ input: { name: store }, actor: "bench" });
      const handle = openStore({ store });
      const thoughtTurn = new Map<string, string>();
      handle.sqlite.transaction(() => {
        for (const t of conv.turns) {
          thoughtTurn.set(thinkThought({ handle, input: { content: t.text, framework: "conversation", timestamp: t.time }, actor: "bench" }).id, t.diaId);
          ingestDocument({ handle, path: `turns/${t.diaId.replace(":", "-")}.md`, origin: "api", text: t.text, mtime: t.time });
        }
      })();
      await drainEmbedQueues({ stores: [store], batchSize: 256 });
      const pathTurn = (p: string) => path.basename(p, ".md").replace("-", ":");
      const raw = rawFts5DocEngine({ label: "raw FTS5 bm25 (porter, OR)", docs: conv.turns.map((t) => ({ path: t.diaId, text: t.text })), tokenize: "porter" });
      const routes: Route[] = [
        { label: raw.label, answer: raw.search },
        // A row whose option this build does not accept is left out, so the same bench runs before and after it lands.
        ...REMEMBER_MODES.filter((m) => rememberInputSchema.safeParse({ query: "probe", ...m.input }).success).map(
          (m): Route => ({
            label: m.label,
            answer: async (q) => (await rememberByQuery({ engine: sqliteRemember, handle: openStore({ store }), core: null, input: { query: q, limit: K, kinds: ["thought"], ...m.input } })).results.map((r) => thoughtTurn.get(r.id) ?? r.id),
          }),
        ),
        ...SEARCH_MODES.map(
          ({ label, params }): Route => ({
            label,
            answer: async (q) => (await searchStore({ handle: openStore({ store }), core: null, input: searchInputSchema.parse({ q, limit: K, ...params }) })).results.map((r) => pathTurn((r as { path: string }).path)),
          }),
        ),
      ];
      prepared.push({ conv, routes });
    }
    const results = await evaluateRoutes(prepared);
    const base = results.get("raw FTS5 bm25 (porter, OR)")!.all;
    const questions = base.n;
    const f3 = (x: number) => x.toFixed(3);
    const rows = [...results].map(([label, t]) => ({
      route: label,
      "recall@10": f3(t.all.recall / t.all.n),
      "× raw FTS5": f3(t.all.recall / base.recall),
      "hit@10": f3(t.all.hit / t.all.n),
      ...Object.fromEntries(
        Object.entries(CATEGORIES).map(([c, name]) => {
          const x = t.byCat.get(Number(c));
          return [`${name} (${x?.n ?? 0})`, x ? f3(x.recall / x.n) : "—"];
        }),
      ),
    }));
    printTable(`LoCoMo evidence recall@10 and hit@10 (${convs.map((c) => c.name).join(", ")}: ${convs.reduce((n, c) => n + c.turns.length, 0)} turns, ${questions} questions of categories 1–4; in process, builtin embedder)`, rows);
  } finally {
    scratch.cleanup();
  }
}

/**
 * The recall paraphrase set (tests/fixtures/recall-quality.ts, as bench/recall.bench.ts reads it): 50 traces, one
 * paraphrased query each ("overlap" shares words, "synonym" none), recall over traces with k = 5 and the store's
 * default min_score, per signal set: hit@5 and MRR@5 ungated, the share of queries whose target passes the gate, the
 * precision of what passes. BENCH_GATED_VECTOR sweeps builtin's gated vector weight (comma-separated) where the
 * build has one.
 */
async function recallSet(): Promise<void> {
  const scratch = scratchStore({ store: "recall-quality" });
  try {
    const handle = openStore({ store: "recall-quality" });
    const ids = QUALITY_CASES.map((c) => recordTrace({ handle, agentId: "bench", input: c.trace }).trace.id);
    await drainEmbedQueues({ stores: ["recall-quality"], batchSize: 256 });
    const minScore = getReflectionSettings({ handle }).min_score;
    const retrieval = (await import("../lib/retrieval")) as Record<string, unknown>;
    const gated = retrieval.GATED_VECTOR_WEIGHTS as Record<string, number> | undefined;
    const sweep = gated ? (process.env.BENCH_GATED_VECTOR ?? "").split(",").filter(Boolean).map(Number) : [];
    const configs: { label: string; signals: "hybrid" | "vector" | "lexical"; gatedVector?: number }[] = [
      { label: "hybrid (default)", signals: "hybrid" },
      ...sweep.map((w) => ({ label: `hybrid, gated w_vec ${w}`, signals: "hybrid" as const, gatedVector: w })),
      { label: "vector only", signals: "vector" },
      { label: "lexical only", signals: "lexical" },
    ];
    const rows: Record<string, string>[] = [];
    const f3 = (x: number) => x.toFixed(3);
    for (const cfg of configs) {
      const saved = gated?.builtin;
      if (gated && cfg.gatedVector !== undefined) gated.builtin = cfg.gatedVector;
      for (const subset of ["all", "overlap", "synonym"] as const) {
        let [hits, rr, passes, returned, n] = [0, 0, 0, 0, 0];
        for (const [i, c] of QUALITY_CASES.entries()) {
          if (subset !== "all" && c.kind !== subset) continue;
          n++;
          const r = await recallReflections({ engine: sqliteRecall, handle: openStore({ store: "recall-quality" }), agentId: "bench", input: { query: c.query, top_k: 5, min_score: 0, kinds: ["trace"], signals: cfg.signals } });
          const pos = r.traces.findIndex((t) => t.id === ids[i]);
          if (pos >= 0) {
            hits++;
            rr += 1 / (pos + 1);
          }
          const kept = r.traces.filter((t) => t.score >= minScore);
          returned += kept.length;
          if (kept.some((t) => t.id === ids[i])) passes++;
        }
        rows.push({ route: `recall ${cfg.label}`, queries: `${subset} (${n})`, "hit@5": f3(hits / n), "MRR@5": f3(rr / n), [`target passes min_score ${minScore}`]: f3(passes / n), precision: f3(returned ? passes / returned : 0) });
      }
      if (gated && saved !== undefined) gated.builtin = saved;
    }
    printTable("Recall paraphrase set (tests/fixtures/recall-quality.ts: 50 traces, 50 paraphrased queries; builtin embedder, k = 5)", rows);
  } finally {
    scratch.cleanup();
  }
}

/**
 * What the context from neighbouring short documents costs search, at its worst: BENCH_MEMORY_LATENCY_DOCS (default
 * 10000) short documents (≤ 300 characters of real text, bench/corpus.ts) in one folder, written 30 s apart, so every
 * query's best hits are seeds with neighbours. 100 queries of four words from other documents, default search
 * (hybrid, group=document) with the context and without it (tuning weight 0, what search did before it), alternating
 * query by query in the same run; p50 / p95 in ms.
 */
async function contextLatency(): Promise<void> {
  const n = Number(process.env.BENCH_MEMORY_LATENCY_DOCS ?? 10_000);
  const scratch = scratchStore({ store: "context-latency" });
  try {
    const windows = loadTextWindows(n + 100);
    const handle = openStore({ store: "context-latency" });
    const t0 = Date.UTC(2026, 0, 1);
    handle.sqlite.transaction(() => {
      for (let i = 0; i < n; i++) ingestDocument({ handle, path: `log/${String(i).padStart(6, "0")}.md`, origin: "api", text: windows[i].slice(0, 300), mtime: t0 + i * 30_000 });
    })();
    await drainEmbedQueues({ stores: ["context-latency"], batchSize: 256 });
    const queries = windows.slice(n, n + 100).map((w) => (w.match(/[A-Za-z]{4,}/g) ?? []).slice(0, 4).join(" ")).filter((q) => q.length > 0);
    const times = { with: [] as number[], without: [] as number[] };
    for (const q of queries) {
      for (const [label, tuning] of [["with", {}], ["without", { context: { weight: 0 } }]] as const) {
        const started = performance.now();
        await searchStore({ handle: openStore({ store: "context-latency" }), core: null, input: searchInputSchema.parse({ q, limit: K }), tuning });
        times[label].push(performance.now() - started);
      }
    }
    const f2 = (x: number) => x.toFixed(2);
    // Paired per query (the same query, one call right after the other): robust to the load moving between calls.
    const paired = times.with.map((t, i) => t - times.without[i]);
    printTable(`Default search (hybrid, group=document) over ${n} short documents written 30 s apart in one folder, ${queries.length} four-word queries, alternating`, [
      { search: "with context (this build)", "p50 ms": f2(percentile(times.with, 50)), "p95 ms": f2(percentile(times.with, 95)) },
      { search: "without context (weight 0: as before)", "p50 ms": f2(percentile(times.without, 50)), "p95 ms": f2(percentile(times.without, 95)) },
      { search: "difference per query (with − without)", "p50 ms": f2(percentile(paired, 50)), "p95 ms": f2(percentile(paired, 95)) },
    ]);
  } finally {
    scratch.cleanup();
  }
}

/**
 * The README known-item sets, as their own benches print them (raw FTS5 beside each search mode, in the same run):
 * the chunk-level and pinned document-level sets (bench/search-quality.bench.ts) and the document set of
 * bench/search-docs.bench.ts. Set BENCH_MEMORY_PARTS=locomo to skip them.
 */
async function knownItemSets(): Promise<void> {
  process.env.BENCH_QUALITY_PARTS ??= "chunk,document";
  for (const bench of ["./search-quality.bench", "./search-docs.bench"]) {
    process.stdout.write(`\n### Known-item set: bench/${bench.slice(2)}.ts\n\n`);
    const mod = (await import(bench)) as { default: () => Promise<void> };
    await mod.default();
  }
}

export default async function main(): Promise<void> {
  const parts = (process.env.BENCH_MEMORY_PARTS ?? "locomo,recall,known-items").split(",");
  if (parts.includes("locomo")) await locomo();
  if (parts.includes("recall")) await recallSet();
  if (parts.includes("latency")) await contextLatency();
  if (parts.includes("known-items")) await knownItemSets();
}
