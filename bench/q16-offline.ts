/**
 * Offline scoring of document-ranking variants (issue 16 quality pass, q16c;
 * a tool, not a bench). Dumps each query's lexical candidates once (the
 * chunk leg's best chunks by plain bm25 — exact-form factor off — and the
 * whole-document index's best documents), then ranks documents with each
 * variant. `variant {}` is today's default and is checked against the real
 * groupByDocument (both MRR columns must agree). Needs the stores
 * bench/q16-eval.ts built (Q16_DATA, default /tmp/q16c/data). The "×"
 * columns divide by the raw FTS5 MRR@10 q16-eval.ts printed for this
 * node_modules (pinned mean 0.576; held-out 2029 0.546, 2030 0.531).
 * Usage: npx tsx bench/q16-offline.ts '[["label",{...Variant}]]'
 */
import Database from "better-sqlite3";
import fs from "node:fs";
import path from "node:path";
import { resetConfigForTests } from "../lib/config";
import { getStoreDb } from "../lib/db/connection";
import { registerEmbeddableKinds } from "../lib/embeddable-kinds";
import { DOCUMENT_SCORING, groupByDocument, searchInputSchema, searchStore, type Candidate, type DocumentScoring } from "../lib/index/search";
import { buildFtsMatch, exactFormShare, foldWord, matchTerms } from "../lib/retrieval";
import { openStore } from "../lib/stores/stores";
import { buildKnownItemSet, loadPinnedSample, parseManifest } from "./known-items";
import { buildLabelledSet, documentRank } from "./search-eval";

const DATA = process.env.Q16_DATA ?? "/tmp/q16c/data";
const SEEDS = [2026, 2027, 2028, 2029, 2030];
type Q = { q: string; target: string };
type Hit = { id: number; path: string; bm25: number };
type Dump = { q: string; target: string; hits: Hit[]; whole: [string, number][] };

export type Variant = {
  /** Exact-form factor on each chunk (default 0.5). */
  exact?: number;
  /** Proximity: chunk × (1 + w × share of adjacent query-word pairs within `win` tokens of each other in the chunk). */
  prox?: { w: number; win: number; stem?: boolean; ordered?: boolean };
  /** Unstemmed chunk bm25 added to the chunk score × u (a second, unicode61 chunk index). */
  unstemmed?: number;
  /** Document-level changes on top of DocumentScoring. */
  doc?: Partial<DocumentScoring>;
  short?: Partial<DocumentScoring["shortQuery"]>;
  /** Saturating chunk evidence: best × (1 + beta × S/(S + k)), S = Σ further chunks ÷ best. */
  sat?: { beta: number; k: number };
  /** Only the best `cap` chunks count (with damped_sum). */
  cap?: number;
  /** Divide chunk evidence by (chunks in the document ÷ mean chunks per document)^gamma. */
  lenNorm?: number;
  /** × (1 + c × idf-weighted share of the query's stems found in the document's matching chunks; `whole`: in any of its chunks). */
  idfCov?: { c: number; whole?: boolean; shortOnly?: boolean; longOnly?: boolean };
  /** Only apply the chunk-level factors (prox, unstemmed) to queries of ≥ / < minTerms. */
  proxLongOnly?: boolean;
  proxShortOnly?: boolean;
};

async function dumpStore(store: string, queries: Q[], limit: number): Promise<Dump[]> {
  const file = path.join(DATA, `dump-${store}.json`);
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, "utf8"));
  const handle = getStoreDb({ store });
  const top = handle.sqlite.prepare("select d.path, -bm25(documents_fts) as score from documents_fts join documents d on d.doc_id = documents_fts.rowid where documents_fts match ? order by bm25(documents_fts) limit ?");
  const out: Dump[] = [];
  for (const { q, target } of queries) {
    const res = await searchStore({ handle: openStore({ store }), core: null, input: { ...searchInputSchema.parse({ q, mode: "fts", match: "any", group: "chunk" }), limit }, tuning: { exactFormBoost: 0 } });
    const match = buildFtsMatch(q, { match: "any" });
    const wanted = new Set(res.results.map((h) => h.path));
    const whole = match ? (top.all(match, Math.max(500, 4 * wanted.size)) as { path: string; score: number }[]).filter((r) => wanted.has(r.path)).map((r) => [r.path, r.score] as [string, number]) : [];
    out.push({ q, target, hits: res.results.map((h) => ({ id: h.id, path: h.path, bm25: h.score })), whole });
  }
  fs.writeFileSync(file, JSON.stringify(out));
  return out;
}

/** Per store: chunk texts, chunk → document, chunks per document, titles, an unstemmed chunk index, stem positions. */
class StoreData {
  text = new Map<number, string>();
  docOf = new Map<number, string>();
  chunksOfDoc = new Map<string, number[]>();
  titles = new Map<string, string>();
  meanChunks: number;
  u: Database.Database;
  p: Database.Database;
  private stemCache = new Map<string, string | null>();
  private posCache = new Map<string, Map<number, number[]>>();
  private dfCache = new Map<string, number>();
  private uScore: Database.Statement;
  constructor(readonly store: string) {
    const h = getStoreDb({ store });
    const rows = h.sqlite.prepare("select c.id, d.path, c.text, c.chunk_index as ci from chunks c join documents d on d.doc_id = c.doc_id").all() as { id: number; path: string; text: string; ci: number }[];
    for (const r of rows) {
      this.text.set(r.id, r.text);
      this.docOf.set(r.id, r.path);
      const l = this.chunksOfDoc.get(r.path) ?? [];
      l.push(r.id);
      this.chunksOfDoc.set(r.path, l);
      if (r.ci === 0) this.titles.set(r.path, (r.text.slice(0, 300).match(/^\s*#{1,6}\s+(.+)$/m)?.[1] ?? r.text.split("\n", 1)[0]).slice(0, 200));
    }
    this.meanChunks = rows.length / this.chunksOfDoc.size;
    const build = (file: string, tokenize: string) => {
      const fresh = !fs.existsSync(file);
      const db = new Database(file);
      if (fresh) {
        db.exec(`create virtual table t using fts5(text, tokenize='${tokenize}'); create virtual table v using fts5vocab(t, instance); create virtual table vr using fts5vocab(t, row);`);
        const ins = db.prepare("insert into t(rowid, text) values (?, ?)");
        db.transaction(() => rows.forEach((r) => ins.run(r.id, r.text)))();
      }
      return db;
    };
    this.u = build(path.join(DATA, `u-${store}.db`), "unicode61 remove_diacritics 2");
    this.p = build(path.join(DATA, `p-${store}.db`), "porter unicode61 remove_diacritics 2");
    this.uScore = this.u.prepare("select rowid as id, -bm25(t) as s from t where t match ? and rowid in (select value from json_each(?))");
  }
  n = () => this.text.size;
  stem(word: string): string | null {
    if (!this.stemCache.has(word)) {
      const db = new Database(":memory:");
      db.exec("create virtual table s using fts5(x, tokenize='porter unicode61 remove_diacritics 2'); create virtual table sv using fts5vocab(s, row)");
      db.prepare("insert into s(x) values (?)").run(word);
      const r = db.prepare("select term from sv limit 1").get() as { term: string } | undefined;
      db.close();
      this.stemCache.set(word, r?.term ?? null);
    }
    return this.stemCache.get(word)!;
  }
  /** Positions of a stem (stemmed index) or an exact word (unstemmed index) per chunk. */
  positions(term: string, stem: boolean): Map<number, number[]> {
    const key = `${stem ? "p" : "u"}:${term}`;
    let m = this.posCache.get(key);
    if (!m) {
      m = new Map();
      const rows = (stem ? this.p : this.u).prepare("select doc, offset from v where term = ?").all(term) as { doc: number; offset: number }[];
      for (const r of rows) {
        const l = m.get(r.doc) ?? [];
        l.push(r.offset);
        m.set(r.doc, l);
      }
      this.posCache.set(key, m);
    }
    return m;
  }
  df(stem: string): number {
    if (!this.dfCache.has(stem)) this.dfCache.set(stem, (this.p.prepare("select doc from vr where term = ?").get(stem) as { doc: number } | undefined)?.doc ?? 0);
    return this.dfCache.get(stem)!;
  }
  idf(stem: string): number {
    const N = this.n();
    const d = this.df(stem);
    return Math.max(1e-6, Math.log((N - d + 0.5) / (d + 0.5)));
  }
  unstemmed(match: string, ids: number[]): Map<number, number> {
    return new Map((this.uScore.all(match, JSON.stringify(ids)) as { id: number; s: number }[]).map((r) => [r.id, r.s]));
  }
}

function pairShare(sd: StoreData, terms: string[], id: number, prox: NonNullable<Variant["prox"]>): number {
  const toks = terms.map((t) => (prox.stem ? sd.stem(t) : foldWord(t))).filter((t): t is string => !!t);
  if (toks.length < 2) return 0;
  let near = 0;
  for (let i = 0; i + 1 < toks.length; i++) {
    const a = sd.positions(toks[i], !!prox.stem).get(id);
    const b = sd.positions(toks[i + 1], !!prox.stem).get(id);
    if (!a || !b) continue;
    let ok = false;
    for (const x of a) {
      for (const y of b) {
        const d = prox.ordered ? y - x : Math.abs(y - x);
        if (d > 0 && d <= prox.win) {
          ok = true;
          break;
        }
      }
      if (ok) break;
    }
    if (ok) near++;
  }
  return near / (toks.length - 1);
}

function rankVariant(sd: StoreData, d: Dump, v: Variant, real: boolean): string[] {
  const terms = matchTerms(d.q);
  const scoring: DocumentScoring = { ...DOCUMENT_SCORING, ...v.doc, shortQuery: { ...DOCUMENT_SCORING.shortQuery, ...v.short } };
  const long = terms.length >= scoring.minTerms;
  if (!long) Object.assign(scoring, scoring.shortQuery);
  const folded = [...new Set(terms.map(foldWord))];
  const exact = v.exact ?? 0.5;
  const applyChunk = !(v.proxLongOnly && !long) && !(v.proxShortOnly && long);
  const match = buildFtsMatch(d.q, { match: "any" });
  const uScores = v.unstemmed && applyChunk && match ? sd.unstemmed(match, d.hits.map((h) => h.id)) : null;
  const scored = d.hits.map((h) => {
    let s = h.bm25 * (1 + exact * exactFormShare(folded, sd.text.get(h.id) ?? ""));
    if (v.prox && applyChunk) s *= 1 + v.prox.w * pairShare(sd, terms, h.id, v.prox);
    if (uScores) s += v.unstemmed! * (uScores.get(h.id) ?? 0);
    return { ...h, s };
  });
  scored.sort((a, b) => b.s - a.s || a.id - b.id);
  const whole = scoring.wholeDocument > 0 ? new Map(d.whole.map(([p, x]) => [`${sd.store}:${p}`, x])) : null;
  if (real) {
    const candidates: Candidate[] = scored.map((h, i) => ({
      key: `${sd.store}:${h.id}`,
      store: sd.store,
      detail: { id: h.id, chunkId: String(h.id), path: h.path, kind: "markdown", chunkIndex: 0, updatedAt: 0, text: "" },
      fts: { rank: i + 1, score: h.s, exactForms: null, snippet: "", highlights: [] },
      vector: null,
      decay: null,
      score: h.s,
    }));
    const hits = groupByDocument({ candidates, handles: [getStoreDb({ store: sd.store })], terms, scoring, wholeDocument: whole, mode: "fts", weights: { fts: 1, vec: 0 }, toHit: (c) => ({ id: c.detail.id, chunk_id: c.detail.chunkId, path: c.detail.path, kind: c.detail.kind, chunk_index: c.detail.chunkIndex, updated_at: c.detail.updatedAt, store: sd.store, score: c.score, snippet: "", highlights: [] }), explain: false, why: () => "" });
    return hits.map((h) => h.path);
  }
  // A copy of groupByDocument's lexical scoring with the variant's extra knobs.
  const docs = new Map<string, typeof scored>();
  for (const h of scored) docs.set(h.path, [...(docs.get(h.path) ?? []), h]);
  const termSet = new Set(terms);
  const stems = v.idfCov ? [...new Set(terms.map((t) => sd.stem(t)).filter((t): t is string => !!t))] : [];
  const idfTotal = stems.reduce((s, t) => s + sd.idf(t), 0);
  const useCov = v.idfCov && !(v.idfCov.shortOnly && long) && !(v.idfCov.longOnly && !long);
  const rows = [...docs].map(([p, chunks]) => {
    const xs = chunks.map((c) => c.s).sort((a, b) => b - a);
    const capped = v.cap ? xs.slice(0, v.cap) : xs;
    let lexical = capped.reduce((sum, x, i) => sum + (i === 0 || scoring.combine === "damped_sum" ? x * scoring.damping ** i : 0), 0);
    if (v.sat) {
      const S = xs.slice(1).reduce((a, b) => a + b, 0) / xs[0];
      lexical = xs[0] * (1 + (v.sat.beta * S) / (S + v.sat.k));
    }
    if (v.lenNorm) lexical /= ((sd.chunksOfDoc.get(p)?.length ?? 1) / sd.meanChunks) ** v.lenNorm;
    if (scoring.fieldBoost > 0 && termSet.size > 0) {
      const fieldWords = new Set(`${p} ${sd.titles.get(p) ?? ""}`.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}\p{M}]+/gu) ?? []);
      let shared = 0;
      for (const t of termSet) if (fieldWords.has(t)) shared++;
      lexical *= 1 + (scoring.fieldBoost * shared) / termSet.size;
    }
    let cov = 1;
    if (useCov && idfTotal > 0) {
      const ids = v.idfCov!.whole ? (sd.chunksOfDoc.get(p) ?? []) : chunks.map((c) => c.id);
      let got = 0;
      for (const t of stems) if (ids.some((id) => sd.positions(t, true).has(id))) got += sd.idf(t);
      cov = 1 + (v.idfCov!.c * got) / idfTotal;
    }
    return { p, lexical, cov };
  });
  const bestL = Math.max(0, ...rows.map((r) => r.lexical));
  const bestD = Math.max(0, ...(whole?.values() ?? []));
  const score = (r: (typeof rows)[number]) => r.cov * ((bestL > 0 ? r.lexical / bestL : 0) + (whole && bestD > 0 ? (scoring.wholeDocument * (whole.get(`${sd.store}:${r.p}`) ?? 0)) / bestD : 0));
  return rows
    .map((r) => ({ p: r.p, x: score(r), first: docs.get(r.p)![0] }))
    .sort((a, b) => b.x - a.x || a.first.id - b.first.id)
    .map((r) => r.p);
}

async function main() {
  registerEmbeddableKinds();
  Object.assign(process.env, { DATA_DIR: DATA, DUALMIND_LOG_LEVEL: "warn", DUALMIND_QUERY_BUDGET_MS: "600000" });
  resetConfigForTests();
  const nm = path.resolve("node_modules");
  const manifest = parseManifest(fs.readFileSync(path.join(__dirname, "known-items-manifest.tsv"), "utf8"));
  const held = JSON.parse(fs.readFileSync(path.join(DATA, "held.json"), "utf8"));
  const dumps = new Map<string, Dump[]>();
  for (const seed of SEEDS) {
    const set = buildKnownItemSet({ docs: loadPinnedSample({ root: nm, manifest: seed < 2029 ? manifest : held, seed }).docs, count: 300, seed });
    dumps.set(`k${seed}`, await dumpStore(`k${seed}`, set.queries.map((q) => ({ q: q.q, target: `source/corpus/${q.target}` })), 203));
  }
  const chunks = getStoreDb({ store: "quality" }).sqlite.prepare("select d.path, c.text from chunks c join documents d on d.doc_id = c.doc_id order by c.id").all() as { path: string; text: string }[];
  dumps.set("quality", await dumpStore("quality", buildLabelledSet(chunks, 300), 99));
  const data = new Map([...dumps.keys()].map((s) => [s, new StoreData(s)]));
  const variants: [string, Variant][] = JSON.parse(process.argv[2] ?? '[["default",{}]]');
  const mrr = (store: string, v: Variant, real: boolean) => {
    const k = store === "quality" ? 10 : 50;
    let rr = 0;
    for (const d of dumps.get(store)!) {
      const r = documentRank(rankVariant(data.get(store)!, d, v, real).slice(0, k), d.target);
      rr += r ? 1 / r : 0;
    }
    return rr / dumps.get(store)!.length;
  };
  for (const [label, v] of variants) {
    const stores = [...SEEDS.map((s) => `k${s}`), "quality"];
    const per = stores.map((s) => mrr(s, v, false));
    const check = Object.keys(v).length === 0 ? ` (real groupByDocument: ${stores.map((s) => mrr(s, v, true).toFixed(4)).join(" / ")})` : "";
    const pinned = (per[0] + per[1] + per[2]) / 3;
    console.log(`| ${label} | ${pinned.toFixed(4)} | ${(pinned / 0.576).toFixed(3)} | ${per.slice(0, 3).map((x) => x.toFixed(3)).join(" / ")} | ${per[3].toFixed(3)} (${(per[3] / 0.546).toFixed(2)}×) / ${per[4].toFixed(3)} (${(per[4] / 0.531).toFixed(2)}×) | ${per[5].toFixed(3)} |${check}`);
  }
}
void main();
