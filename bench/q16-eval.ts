/**
 * Fast document-level evaluation for the issue-16 quality pass (not a bench):
 * builds the pinned samples (2026–2028), the held-out seeds (2029, 2030) and
 * the chunk-level set once under Q16_DATA, then scores one tuning (JSON in
 * argv[2]) with mode=fts match=any (what the default answers with builtin).
 */
import fs from "node:fs";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { getStoreDb } from "../lib/db/connection";
import { resetEmbedderForTests } from "../lib/embed/model";
import { registerEmbeddableKinds } from "../lib/embeddable-kinds";
import { reindexStore } from "../lib/index/reindex";
import { type SearchTuning } from "../lib/index/search";
import { createStore } from "../lib/stores/stores";
import { buildKnownItemSet, drawPinnedSamples, loadPinnedSample, parseManifest } from "./known-items";
import { buildLabelledSet, dualmindEngine, evaluateDocEngine, evaluateMode, rawFts5DocEngine } from "./search-eval";

const DATA = process.env.Q16_DATA ?? "/tmp/q16c/data";
const SEEDS = (process.env.Q16_SEEDS ?? "2026,2027,2028,2029,2030").split(",").map(Number);
const nm = path.resolve("node_modules");

async function main() {
  registerEmbeddableKinds();
  const tunings: [string, SearchTuning, Record<string, unknown>][] = JSON.parse(process.argv[2] ?? '[["default",{},{}]]');
  const fresh = !fs.existsSync(path.join(DATA, "built"));
  const manifest = parseManifest(fs.readFileSync(path.join(__dirname, "known-items-manifest.tsv"), "utf8"));
  const held = fresh || !fs.existsSync(path.join(DATA, "held.json")) ? drawPinnedSamples({ root: nm, limit: 500, seeds: SEEDS.filter((s) => s >= 2029) }) : JSON.parse(fs.readFileSync(path.join(DATA, "held.json"), "utf8"));
  const sets = new Map<number, ReturnType<typeof buildKnownItemSet>>();
  for (const seed of SEEDS) {
    const docs = loadPinnedSample({ root: nm, manifest: seed < 2029 ? manifest : held, seed }).docs;
    sets.set(seed, buildKnownItemSet({ docs, count: 300, seed }));
  }
  const roots = SEEDS.map((s) => `k${s}=${path.join(DATA, `c${s}`, "corpus")}`).concat(`quality=${nm}`).join(",");
  Object.assign(process.env, { DATA_DIR: DATA, DUALMIND_LOG_LEVEL: "warn", DUALMIND_EMBED_BACKLOG_WATERMARK: "10000000", DUALMIND_QUERY_BUDGET_MS: "600000", DUALMIND_SOURCE_ROOTS: roots, DUALMIND_SOURCE_INCLUDE: "**/*.md", DUALMIND_SOURCE_EXCLUDE: "**/.git/**" });
  resetConfigForTests();
  resetEmbedderForTests();
  if (fresh) {
    fs.mkdirSync(DATA, { recursive: true });
    fs.writeFileSync(path.join(DATA, "held.json"), JSON.stringify(held));
    for (const seed of SEEDS) {
      for (const d of sets.get(seed)!.docs) {
        const file = path.join(DATA, `c${seed}`, "corpus", ...d.path.split("/"));
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, d.text);
      }
    }
    for (const store of [...SEEDS.map((s) => `k${s}`), "quality"]) {
      createStore({ input: { name: store }, actor: "eval" });
      reindexStore({ handle: getStoreDb({ store }) });
    }
    fs.writeFileSync(path.join(DATA, "built"), "1");
  }
  const chunks = getStoreDb({ store: "quality" }).sqlite.prepare("select d.path, c.text from chunks c join documents d on d.doc_id = c.doc_id order by c.id").all() as { path: string; text: string }[];
  const chunkQueries = buildLabelledSet(chunks, 300);
  const raw: number[] = [];
  for (const seed of SEEDS) {
    const set = sets.get(seed)!;
    const docs = set.docs.map((d) => ({ path: `source/corpus/${d.path}`, text: d.text }));
    const e = rawFts5DocEngine({ label: "raw", docs, tokenize: "unicode61" });
    const p = rawFts5DocEngine({ label: "raw", docs, tokenize: "porter" });
    const qs = set.queries.map((q) => ({ ...q, target: `source/corpus/${q.target}` }));
    raw.push(Math.max((await evaluateDocEngine(e, qs)).mrr, (await evaluateDocEngine(p, qs)).mrr));
    e.close();
    p.close();
  }
  console.log(`raw per seed: ${raw.map((x) => x.toFixed(3)).join(" / ")}; pinned mean ${((raw[0] + raw[1] + raw[2]) / 3).toFixed(3)}`);
  for (const [label, tuning, params] of tunings) {
    const per: number[] = [];
    const t0 = performance.now();
    for (const seed of SEEDS) {
      const set = sets.get(seed)!;
      const qs = set.queries.map((q) => ({ ...q, target: `source/corpus/${q.target}` }));
      per.push((await evaluateDocEngine(dualmindEngine({ store: `k${seed}`, label, params: { mode: "fts", match: "any", ...params }, tuning }), qs)).mrr);
    }
    const chunkMrr = process.env.Q16_NO_CHUNK ? NaN : (await evaluateMode("quality", chunkQueries, label, { mode: "fts", match: "any", ...params }, tuning)).mrr;
    const pinned = (per[0] + per[1] + per[2]) / 3;
    const pinnedRaw = (raw[0] + raw[1] + raw[2]) / 3;
    const pinnedCols = SEEDS[0] === 2026 ? `${pinned.toFixed(4)} | ${(pinned / pinnedRaw).toFixed(3)} | ${per.slice(0, 3).map((x) => x.toFixed(4)).join(" / ")} | ` : "";
    const heldFrom = SEEDS[0] === 2026 ? 3 : 0;
    console.log(`| ${label} | ${pinnedCols}${per.slice(heldFrom).map((x, i) => `${x.toFixed(4)} (${(x / raw[heldFrom + i]).toFixed(3)}×)`).join(" / ")} | ${chunkMrr.toFixed(4)} | ${((performance.now() - t0) / 1000).toFixed(0)} s |`);
  }
}

void main();
