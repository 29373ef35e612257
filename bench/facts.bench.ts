/**
 * Facts that change over time, from real text: the LoCoMo development conversations (read in place from
 * BENCH_LOCOMO_DIR, as bench/memory-quality.bench.ts reads them) hold people who change jobs, adopt pets, open a
 * studio. bench/facts-manifest.tsv names those facts (dialog ids, a subject and property label, the question a user
 * would ask). Every turn of each conversation is written the way an agent would, through the backends (so the fact
 * rules of lib/index/facts.ts apply): as a thought (event time = its session's time) and as a memory (valid_from =
 * its session's time); the turns the manifest names carry their subject and property. Beside it, the plain
 * baseline in the same run: the same turns with no subject or property.
 *
 * Per fact and route: the rank of the current turn (the newest value) by default, and of the value before it with
 * as_of half way between the two turns; hit@1 and MRR@10 over the facts, the share of facts whose wanted value is
 * in the top 10 above the other value, and how often the stale value is still in the top 10 by default. remember (kinds: thought) answers both;
 * search (hybrid, the memory documents) answers the default only: a memory written now with no fact row did not
 * exist at a past as_of (its record time), so a past as_of leaves search only the fact turns.
 */
import fs from "node:fs";
import path from "node:path";
import { graphBackend } from "../lib/graph/backend";
import { stores } from "../lib/stores/backend";
import { drainEmbedQueues } from "../lib/embed/worker";
import { searchInputSchema } from "../lib/index/search";
import { createStore } from "../lib/stores/stores";
import { evaluateRoutes, loadLocomo, type Conversation, type Route } from "./memory-quality.bench";
import { scratchStore } from "./search-eval";
import { printTable } from "./table";

const K = 10;
type Fact = { conversation: string; subject: string; property: string; question: string; turns: string[] };

function readManifest(): Fact[] {
  return fs
    .readFileSync(path.join(__dirname, "facts-manifest.tsv"), "utf8")
    .split("\n")
    .filter((l) => l.trim() && !l.startsWith("#"))
    .map((l) => {
      const [conversation, subject, property, question, turns] = l.split("\t");
      return { conversation, subject, property, question, turns: turns.split(",") };
    });
}

const memoryPath = (diaId: string) => `turns/${diaId.replace(":", "-").toLowerCase()}`;
const turnOfPath = (p: string) => path.basename(p, ".md").replace("-", ":").toUpperCase();

/** Write every turn of `conv` into `store`: thought and memory, with subject and property where `labels` has one. */
async function writeTurns({ conv, store, labels }: { conv: Conversation; store: string; labels: Map<string, { subject: string; property: string }> }): Promise<Map<string, string>> {
  createStore({ input: { name: store }, actor: "bench" });
  const thoughtTurn = new Map<string, string>();
  for (const t of conv.turns) {
    const fact = labels.get(t.diaId);
    const thought = await graphBackend().think({ store, input: { content: t.text, framework: "conversation", timestamp: t.time, ...(fact ?? {}) }, actor: "bench" });
    thoughtTurn.set(thought.id, t.diaId);
    await stores().createMemory({ store, input: { path: memoryPath(t.diaId), body: t.text, valid_from: t.time, ...(fact ?? {}) }, actor: "bench" });
  }
  await drainEmbedQueues({ stores: [store], batchSize: 256 });
  return thoughtTurn;
}

/** Ranks (1-based, null past K) of the current value and the one before it, by default and under as_of between them. */
type Ranks = { conversation: string; current: number | null; before: number | null; staleNow: number | null; newerThen: number | null };
const rankOf = (got: string[], want: string) => {
  const i = got.slice(0, K).indexOf(want);
  return i < 0 ? null : i + 1;
};

export default async function facts(): Promise<void> {
  const manifest = readManifest();
  const convs = loadLocomo().filter((c) => manifest.some((f) => f.conversation === c.name));
  const scratch = scratchStore({ store: "facts-scratch" });
  try {
    const rows = new Map<string, Ranks[]>();
    // LoCoMo's own questions over the same stores: what the fact rules do to questions that ask about no fact.
    const ordinary: { conv: Conversation; routes: Route[] }[] = [];
    const push = (label: string, r: Ranks) => rows.set(label, [...(rows.get(label) ?? []), r]);
    for (const conv of convs) {
      const mine = manifest.filter((f) => f.conversation === conv.name);
      const time = new Map(conv.turns.map((t) => [t.diaId, t.time]));
      for (const f of mine) for (const id of f.turns) if (!time.has(id)) throw new Error(`facts-manifest: no turn ${id} in conversation ${conv.name}`);
      const labels = new Map(mine.flatMap((f) => f.turns.map((id) => [id, { subject: f.subject, property: f.property }] as const)));
      for (const [mode, withLabels] of [
        ["supersession", labels],
        ["plain", new Map()],
      ] as const) {
        const store = `facts-${conv.name}-${mode}`;
        const thoughtTurn = await writeTurns({ conv, store, labels: withLabels });
        const rememberIds = async (query: string) => (await graphBackend().remember({ store, input: { query, limit: K, kinds: ["thought"] } })).results.map((r) => thoughtTurn.get(r.id) ?? r.id);
        const searchIds = async (query: string) => (await stores().search({ store, input: searchInputSchema.parse({ q: query, limit: K, mode: "hybrid" }) })).results.map((h) => turnOfPath(h.path));
        ordinary.push({ conv, routes: [{ label: `remember (${mode})`, answer: rememberIds }, { label: `search hybrid (${mode})`, answer: searchIds }] });
        for (const f of mine) {
          const current = f.turns.at(-1)!;
          const before = f.turns.at(-2)!;
          const between = Math.round((time.get(before)! + time.get(current)!) / 2);
          const remember = async (asOf?: number) => (await graphBackend().remember({ store, input: { query: f.question, limit: K, kinds: ["thought"], ...(asOf ? { as_of: asOf } : {}) } })).results.map((r) => thoughtTurn.get(r.id) ?? r.id);
          const now = await remember();
          const then = await remember(between);
          push(`remember (${mode})`, { conversation: conv.name, current: rankOf(now, current), before: rankOf(then, before), staleNow: rankOf(now, before), newerThen: rankOf(then, current) });
          const found = await searchIds(f.question);
          push(`search hybrid (${mode})`, { conversation: conv.name, current: rankOf(found, current), before: null, staleNow: rankOf(found, before), newerThen: null });
        }
      }
    }
    const f3 = (x: number) => x.toFixed(3);
    const hit1 = (rs: (number | null)[]) => f3(rs.filter((r) => r === 1).length / rs.length);
    const mrr = (rs: (number | null)[]) => f3(rs.reduce<number>((s, r) => s + (r ? 1 / r : 0), 0) / rs.length);
    /** The share of facts whose wanted value is in the top K above the other value (or the other is not there). */
    const first = (pairs: [number | null, number | null][]) => f3(pairs.filter(([want, other]) => want !== null && (other === null || want < other)).length / pairs.length);
    const table = (title: string, of: (r: Ranks) => boolean) =>
      printTable(
        title,
        [...rows].map(([route, all]) => {
          const rs = all.filter(of);
          return {
            route,
            "current hit@1": hit1(rs.map((r) => r.current)),
            "current MRR@10": mrr(rs.map((r) => r.current)),
            "current above the old": first(rs.map((r) => [r.current, r.staleNow])),
            "old in top 10": f3(rs.filter((r) => r.staleNow !== null).length / rs.length),
            "as_of: before hit@1": route.startsWith("search") ? "—" : hit1(rs.map((r) => r.before)),
            "as_of: before MRR@10": route.startsWith("search") ? "—" : mrr(rs.map((r) => r.before)),
            "as_of: old above the current": route.startsWith("search") ? "—" : first(rs.map((r) => [r.before, r.newerThen])),
          };
        }),
      );
    table(
      `Facts that change over time (${manifest.length} facts of LoCoMo ${convs.map((c) => c.name).join(", ")}, bench/facts-manifest.tsv; every turn written as a thought and a memory; in process, builtin embedder): the current value by default, the value before with as_of between the two`,
      () => true,
    );
    const asked = await evaluateRoutes(ordinary);
    const questions = convs.reduce((n, c) => n + c.questions.length, 0);
    printTable(
      `LoCoMo's own questions over the same stores (${questions} questions of categories 1–4, evidence recall@10 and hit@10): the fact rules beside the plain turns, on questions that mostly ask about no fact (a retired value is hidden by default, so a question whose evidence is an old value loses it)`,
      [...asked].map(([route, t]) => ({ route, "recall@10": f3(t.all.recall / t.all.n), "hit@10": f3(t.all.hit / t.all.n), questions: t.all.n })),
    );
    // Per conversation: tune on one, check on the other.
    for (const conv of convs) table(`Conversation ${conv.name} alone (${manifest.filter((f) => f.conversation === conv.name).length} facts)`, (r) => r.conversation === conv.name);
  } finally {
    scratch.cleanup();
  }
}
