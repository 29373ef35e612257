import { and, eq, gte, isNotNull, lt, notLike } from "drizzle-orm";
import type { StoreHandle } from "../db/connection";
import { read, select, type AnyStoreHandle, type On, type Op, type QueryHelpers } from "../db/port";
import { contentWords, queryWords } from "../retrieval/match";
import { tokenRowsOf } from "../retrieval/fts-tokens";
import { rrfTerm } from "../retrieval/fusion";
import { itemStateTable, memoryIdOfDocument, TRASH_STATE_PREFIX, type ItemKind, type ItemStatus, type ItemView, type RunOn } from "./item-state";

/**
 * The writer's subject and property as evidence of what a query asks (docs/ARCHITECTURE.md, "Governed memory"),
 * written once for both engines and every route that ranks facts (remember, search).
 *
 * A fact's key is its subject and property, folded (lib/index/facts.ts factKeyOf). A query names a key when every
 * word of its subject is one of the query's words (case folded) and every word of its property is one of them after
 * the full-text tokenizer's folding and stemming (porter: "adopting" meets "adoption", "hobbies" meets "hobby"). The
 * items of a named key are the values the writer stated for exactly what is asked; supersession (lib/index/facts.ts)
 * leaves one of them visible at a time (the current one by default, the one that held at as_of under as_of), so the
 * caller boosts the visible ones and admits them as candidates when the text legs did not find them.
 *
 * Each named item's strength is the number of the query's words (stemmed) its key names, relative to the key that
 * names most (1 for it), as a lexical score is relative to the best hit: a key that says more of the query
 * ("Caroline" + "art show") weighs more than one that says less ("Caroline" + "art").
 *
 * A query that names a subject but none of its keys' properties may still ask about one of them in other words
 * ("Gina's job" for "gina / work"). A key is then known by its history: its vocabulary is the words of its property
 * and of every value it has held (active or retired: what was written and not refused; proposals and rejected values
 * say nothing). The key whose vocabulary holds the query's other words most specifically among the subject's keys —
 * each word scoring ln(1 + K/df), K the subject's keys and df those holding the word — is the one *described*, when it
 * scores alone highest (a tie describes none). Its strength is the share of the query's other words it holds. The
 * current value need not repeat the words of the question: the values before it said them ("lost my job" before
 * "my store is open").
 *
 * Bounded: the keys are found by subject, one index range per distinct content word of the query (at most
 * maxWords) and status the reader's view can show (at most three), each reading at most maxRowsPerWord rows of item
 * state: a query naming many subjects reads at most 3 × maxWords × maxRowsPerWord rows, never every fact of the
 * store; the history of a described key is read the same way (the retired range of the subject's words, only when a
 * subject is named and none of its keys is). The caller admits at most as many named items as its other sources may
 * bring (remember: `candidates`).
 */
export const FACT_MATCH_LIMITS = {
  /** Distinct content words of a query looked up as a subject's first word. */
  maxWords: 16,
  /** Rows of item state read for one word (the facts, current and past, of subjects starting with it). */
  maxRowsPerWord: 64,
} as const;

/** The folding and stemming of the graph's full-text tables (thoughts_fts), applied the same way for both engines. */
const STEMMING_TOKENIZER = "porter unicode61 remove_diacritics 2";

/** A fact key's parts (factKeyOf joins them with U+001F). */
const KEY_SEPARATOR = "\u001f";

/** The words of a text as a fact key folds them (lower case) and as the query splits them. */
const wordsOf = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];

/** A named item: its id, its key and its strength (0..1], the words its key names relative to the key naming most. */
export type FactMatch = { id: string; key: string; strength: number };

/** What a query looks up: its content words (each a subject's possible first word). */
export function factLookupWords({ query }: { query: string }): string[] {
  return [...new Set(contentWords(queryWords(query.toLowerCase())).flatMap(wordsOf))].slice(0, FACT_MATCH_LIMITS.maxWords);
}

/**
 * The statuses of item state whose facts the view can show: the active ones always; the retired ones under as_of (a
 * value that held then) or include_retired; proposals only with include_proposed; rejected items never. Each is read
 * as its own range, so rows of a status the view hides (a reviewed agent's proposals, say) never fill a range the
 * view reads.
 */
export function factLookupStatuses({ view = {} }: { view?: ItemView }): ItemStatus[] {
  return ["active", ...(view.asOf !== undefined || view.includeRetired ? (["retired"] as const) : []), ...(view.includeProposed ? (["proposed"] as const) : [])];
}

/**
 * The items of `kind` whose fact key the query names (the module's rule), strongest first: those of the statuses the
 * view can show (factLookupStatuses), which of them are visible is still the caller's (as_of hides what came later).
 * One index range read (item_state_fact_lookup_idx) per lookup word and status.
 */
export function* factMatchesOp({ kind, query, view = {} }: { kind: ItemKind; query: string; view?: ItemView }): Op<FactMatch[]> {
  const words = factLookupWords({ query });
  if (words.length === 0) return [];
  // A store (or kind) with no fact pays one probe of the index, not a range per word.
  const any = yield* select({ s: itemStateTable }, (db, { s }) => db.select({ itemId: s.itemId }).from(s).where(and(eq(s.kind, kind), isNotNull(s.factKey))).limit(1));
  if (any.length === 0) return [];
  type Found = { itemId: string; factKey: string; factValue: string | null; status: ItemStatus };
  const range = function* (status: ItemStatus, ws: string[]): Op<Found[]> {
    const out: Found[] = [];
    for (const w of ws) {
      const rows = yield* select({ s: itemStateTable }, (db, { s }, q) => factRangeQuery({ db, s, q, kind, status, word: w }));
      for (const r of rows as { itemId: string; factKey: string | null; factValue: string | null }[]) if (r.factKey) out.push({ itemId: r.itemId, factKey: r.factKey, factValue: r.factValue, status });
    }
    return out;
  };
  const statuses = factLookupStatuses({ view });
  const found: Found[] = [];
  for (const status of statuses) found.push(...(yield* range(status, words)));
  if (found.length === 0) return [];
  const keys = [...new Set(found.map((r) => r.factKey))];
  const strengths = namedKeyStrengths({ query, keys });
  // Subjects the query names with none of their keys named: their keys' histories (the retired values too) describe them.
  const unnamed = namedSubjectsWithout({ query, keys, named: strengths });
  if (unnamed.length > 0) {
    const history = [...found.filter((r) => r.status !== "proposed")];
    if (!statuses.includes("retired")) history.push(...(yield* range("retired", [...new Set(unnamed.map((subject) => subject.split(" ")[0]))])));
    const values = new Map<string, string[]>();
    for (const r of history) if (unnamed.includes(subjectOf(r.factKey))) values.set(r.factKey, [...(values.get(r.factKey) ?? []), ...(r.factValue && !r.factValue.startsWith("sha256:") ? [r.factValue] : [])]);
    for (const [key, strength] of describedKeyStrengths({ query, keys: [...values].map(([key, vs]) => ({ key, values: vs })) })) strengths.set(key, strength);
  }
  return found.flatMap((r) => (strengths.has(r.factKey) ? [{ id: r.itemId, key: r.factKey, strength: strengths.get(r.factKey)! }] : [])).sort((a, b) => b.strength - a.strength || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * One range of the lookup, written once for both engines: the items of `kind` and `status` whose key's subject is
 * `word` or starts with the word `word`, from "word<U+001F>" up to "word!" (U+001F, then the space, sort before "!"),
 * the key compared byte by byte; at most maxRowsPerWord rows, over item_state_fact_lookup_idx.
 */
export function factRangeQuery({ db, s, q, kind, status, word }: { db: StoreHandle["db"]; s: typeof itemStateTable.sqlite; q: QueryHelpers; kind: ItemKind; status: ItemStatus; word: string }) {
  return db
    .select({ itemId: s.itemId, factKey: s.factKey, factValue: s.factValue })
    .from(s)
    // A deleted memory's state waiting with its trash entry is no fact of the store's (neither a value nor history).
    .where(and(eq(s.kind, kind), eq(s.status, status), isNotNull(s.factKey), gte(q.bytewise(s.factKey), `${word}${KEY_SEPARATOR}`), lt(q.bytewise(s.factKey), `${word}!`), notLike(s.itemId, `${TRASH_STATE_PREFIX}%`)))
    .limit(FACT_MATCH_LIMITS.maxRowsPerWord);
}

/** factMatchesOp as its own read. */
export function factMatches<H extends AnyStoreHandle>({ handle, kind, query, view }: { handle: H; kind: ItemKind; query: string; view?: ItemView }): On<H, FactMatch[]> {
  return read(handle, factMatchesOp({ kind, query, view }));
}

/**
 * Of `keys`, those the query names, with their strength: the subject's words all among the query's words, the
 * property's stems all among the query's stems; strength = the query's stems the key names / the most any key names.
 */
export function namedKeyStrengths({ query, keys }: { query: string; keys: string[] }): Map<string, number> {
  const out = new Map<string, number>();
  if (keys.length === 0) return out;
  const queryWordSet = new Set(wordsOf(query));
  const parts = keys.map((k) => {
    const [subject, property = ""] = k.split(KEY_SEPARATOR);
    return { key: k, subject: wordsOf(subject), property };
  });
  const candidates = parts.filter((p) => p.subject.length > 0 && p.subject.every((w) => queryWordSet.has(w)));
  if (candidates.length === 0) return out;
  const [queryStems, ...keyStems] = tokenRowsOf({ tokenize: STEMMING_TOKENIZER, texts: [query, ...candidates.flatMap((p) => [p.property, p.subject.join(" ")])] });
  const asked = new Set(queryStems);
  const covered = new Map<string, number>();
  candidates.forEach((p, i) => {
    const property = keyStems[2 * i];
    const subject = keyStems[2 * i + 1];
    if (property.length === 0 || !property.every((s) => asked.has(s))) return;
    covered.set(p.key, new Set([...subject, ...property].filter((s) => asked.has(s))).size);
  });
  // Relative to the key that names most of the query (1 for it), as a lexical score is relative to the best hit.
  const best = Math.max(0, ...covered.values());
  for (const [key, n] of covered) out.set(key, best > 0 ? n / best : 1);
  return out;
}

/** A key's subject (its words as the key folds them, joined by one space). */
const subjectOf = (key: string) => wordsOf(key.split(KEY_SEPARATOR)[0]).join(" ");

/** The subjects of `keys` the query names (every word among the query's words) none of whose keys is in `named`. */
export function namedSubjectsWithout({ query, keys, named }: { query: string; keys: string[]; named: ReadonlyMap<string, number> }): string[] {
  const queryWordSet = new Set(wordsOf(query));
  const subjects = new Set(keys.map(subjectOf).filter((s) => s.length > 0 && s.split(" ").every((w) => queryWordSet.has(w))));
  for (const key of named.keys()) subjects.delete(subjectOf(key));
  return [...subjects];
}

/**
 * Of `keys` (each with the values it has held), those the query describes (the module's rule): per subject the query
 * names, the key whose vocabulary (its property's and its values' stems) holds the query's other stems most
 * specifically, when it alone scores highest; strength = the share of the query's other stems it holds.
 */
export function describedKeyStrengths({ query, keys }: { query: string; keys: { key: string; values: string[] }[] }): Map<string, number> {
  const out = new Map<string, number>();
  const queryWordSet = new Set(wordsOf(query));
  const bySubject = new Map<string, { key: string; values: string[] }[]>();
  for (const k of keys) {
    const subject = subjectOf(k.key);
    if (subject.length > 0 && subject.split(" ").every((w) => queryWordSet.has(w))) bySubject.set(subject, [...(bySubject.get(subject) ?? []), k]);
  }
  for (const [subject, mine] of bySubject) {
    const [queryStems, subjectStems, ...vocabs] = tokenRowsOf({ tokenize: STEMMING_TOKENIZER, texts: [factLookupWords({ query }).join(" "), subject, ...mine.map((k) => [k.key.split(KEY_SEPARATOR)[1] ?? "", ...k.values].join("\n"))] });
    const own = new Set(subjectStems);
    // The query's other words: not the subject's, not a lone letter ("Gina's" leaves an "s").
    const asked = [...new Set(queryStems)].filter((w) => !own.has(w) && w.length > 1);
    if (asked.length === 0) continue;
    const held = vocabs.map((v) => new Set(v));
    const df = new Map(asked.map((w) => [w, held.filter((v) => v.has(w)).length] as const));
    const scores = held.map((v) => asked.reduce((sum, w) => sum + (v.has(w) ? Math.log(1 + mine.length / df.get(w)!) : 0), 0));
    const best = Math.max(...scores);
    if (best <= 0 || scores.filter((x) => x === best).length > 1) continue;
    const i = scores.indexOf(best);
    const share = asked.filter((w) => held[i].has(w)).length / asked.length;
    // A key known by its history must account for most of what is asked, not for one word of it.
    if (share > 0.5) out.set(mine[i].key, share);
  }
  return out;
}

/**
 * Search's form of the rule (hybrid answers, both engines: lib/index/search.ts finishSearch): the fact key match is
 * one more ranked leg beside the full-text and vector legs, in which every named memory ranks first, weighted by the
 * full-text leg's weight × its strength. Hits are re-ordered; other modes (scores of another scale) are left as they are.
 */
export async function withFactLeg<H extends { store: string; path: string; kind: string; score: number; id: number }>({ hits, handles, query, view = {}, weight, run = (handle, op) => Promise.resolve(read(handle, op)) }: {
  hits: H[];
  handles: readonly AnyStoreHandle[];
  query: string;
  /** The search's view (as_of, include_retired, include_proposed): the statuses the lookup reads. */
  view?: ItemView;
  /** The full-text leg's weight. */
  weight: number;
  /** Where the lookup runs: its own read, or (PostgreSQL) the search's open transaction. */
  run?: RunOn;
}): Promise<H[]> {
  let changed = false;
  for (const handle of handles) {
    const mine = hits.filter((h) => h.store === handle.store && memoryIdOfDocument(h) !== null);
    if (mine.length === 0) continue;
    const named = new Map((await run(handle, factMatchesOp({ kind: "memory", query, view }))).map((m) => [m.id, m.strength] as const));
    for (const h of mine) {
      const strength = named.get(memoryIdOfDocument(h)!);
      if (!strength) continue;
      h.score += rrfTerm(weight * strength, 1);
      changed = true;
    }
  }
  return changed ? [...hits].sort((a, b) => b.score - a.score || (a.store === b.store ? a.id - b.id : a.store < b.store ? -1 : 1)) : hits;
}
