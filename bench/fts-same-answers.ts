import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadTextWindows, notesBetween } from "./corpus";

/**
 * The same full-text answers from two versions of the code: one store of
 * real text (node_modules markdown, bench/corpus.ts), a few hundred queries
 * (common words paired, rare beside common, three and four words, advanced
 * syntax), each asked three times through searchFullText (group=chunk) and
 * searchStore (the route's default, group=document), both match modes;
 * first with no word lists, then with the lists built. Prints one JSON line
 * per answer (top-10 ids or paths with their scores), so two versions'
 * outputs are compared with `diff`:
 *
 *   npx tsx bench/fts-same-answers.ts > /tmp/after.jsonl
 *
 * FTS_SAME_NOTES sets the corpus size (default 12000 notes, ~21k chunks).
 */
const NOTES = Number(process.env.FTS_SAME_NOTES ?? 12_000);

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "dualmind-fts-same-"));
  Object.assign(process.env, { DATA_DIR: dataDir, DUALMIND_DISABLE_VECTORS: "true", DUALMIND_EMBED_WORKER: "false", DUALMIND_QUERY_BUDGET_MS: "60000", DUALMIND_WORD_LISTS_MIN_ROWS: "0" });
  const { createStore, openStore } = await import("../lib/stores/stores");
  const { putDocuments, putDocumentsSchema } = await import("../lib/index/ingest");
  const { searchFullText } = await import("../lib/index/fulltext");
  const { searchInputSchema, searchStore } = await import("../lib/index/search");
  const { buildWordLists } = await import("../lib/retrieval/word-lists");
  const { LISTED_TABLES } = await import("../lib/index/word-list-upkeep");
  const { closeAllDatabases } = await import("../lib/db/connection");
  try {
    const windows = loadTextWindows(Number.MAX_SAFE_INTEGER);
    createStore({ input: { name: "same" }, actor: "bench" });
    const handle = openStore({ store: "same" });
    for (let from = 0; from < NOTES; from += 500) {
      putDocuments({ handle, input: putDocumentsSchema.parse({ documents: notesBetween({ windows, from, to: Math.min(NOTES, from + 500) }).map((n) => ({ path: n.path, content: n.text })) }), actor: "bench" });
    }
    const queries = queriesOf(handle.sqlite);
    process.stderr.write(`fts-same-answers: ${NOTES} notes, ${queries.length} queries\n`);
    const ask = async (phase: string) => {
      for (const { q, syntax } of queries) {
        for (const match of ["all", "any"] as const) {
          for (let call = 1; call <= 3; call++) {
            const chunk = searchFullText({ handle, core: null, input: searchInputSchema.parse({ q, limit: 10, match, mode: "fts", group: "chunk", syntax }) });
            console.log(JSON.stringify({ phase, q, syntax, match, call, leg: "chunk", top: chunk.results.map((h) => [h.id, h.score]) }));
            const doc = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, limit: 10, match, mode: "fts", syntax }) });
            console.log(JSON.stringify({ phase, q, syntax, match, call, leg: "document", top: doc.results.map((h) => [h.path, h.score]) }));
          }
        }
      }
    };
    await ask("no lists");
    for (const { table, texts } of LISTED_TABLES) buildWordLists({ db: handle.sqlite, table, texts: texts?.(handle.sqlite), minTableRows: 1000, minRows: 500 });
    await ask("lists");
  } finally {
    closeAllDatabases();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Queries from the store's own vocabulary: its commonest words paired, a rare word beside a common one, longer ORs, and a few advanced expressions. */
function queriesOf(db: import("better-sqlite3").Database): { q: string; syntax: "plain" | "fts5" }[] {
  db.exec("create virtual table if not exists temp.same_vocab using fts5vocab(main, chunks_fts, 'row')");
  const words = db.prepare("select term from temp.same_vocab where length(term) >= 4 and term glob '[a-z]*' and term not glob '*[0-9]*' order by doc desc, term limit 40").pluck().all() as string[];
  const rare = db.prepare("select term from temp.same_vocab where length(term) >= 6 and term glob '[a-z]*' and doc between 3 and 50 order by term limit 60").pluck().all() as string[];
  const out: { q: string; syntax: "plain" | "fts5" }[] = [];
  for (let i = 0; i < words.length; i += 2) out.push({ q: `${words[i]} ${words[i + 1]}`, syntax: "plain" });
  for (let i = 0; i < 20; i++) out.push({ q: words[i], syntax: "plain" });
  for (let i = 0; i < 60; i++) out.push({ q: `${rare[i]} ${words[i % words.length]}`, syntax: "plain" });
  for (let i = 0; i < 30; i++) out.push({ q: `${words[i]} ${words[(i + 7) % words.length]} ${words[(i + 13) % words.length]}${i % 2 ? ` ${rare[i]}` : ""}`, syntax: "plain" });
  for (let i = 0; i < 20; i++) out.push({ q: `${words[(3 * i) % words.length]} ${words[(3 * i + 1) % words.length]} ${words[(3 * i + 2) % words.length]} ${words[(3 * i + 5) % words.length]}`, syntax: "plain" });
  for (let i = 0; i < 10; i++) out.push({ q: `${words[i]}-${words[i + 1]} ${words[i + 2]}`, syntax: "plain" });
  for (let i = 0; i < 10; i++) out.push({ q: `${words[i]} NOT ${words[i + 3]}`, syntax: "fts5" });
  return out;
}

void main();
