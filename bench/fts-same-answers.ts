import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadTextWindows, notesBetween } from "./corpus";
import { fullTextQueriesOf } from "./fts-queries";

/**
 * The same full-text answers from two versions of the code: one store of
 * real text (node_modules markdown, bench/corpus.ts), a few hundred queries
 * (common words paired, rare beside common, three and four words, advanced
 * syntax), each asked three times through searchStore (group=chunk, plain bm25) and
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
    const queries = fullTextQueriesOf(handle.sqlite);
    process.stderr.write(`fts-same-answers: ${NOTES} notes, ${queries.length} queries\n`);
    const ask = async (phase: string) => {
      for (const { q, syntax } of queries) {
        for (const match of ["all", "any"] as const) {
          for (let call = 1; call <= 3; call++) {
            const chunk = await searchStore({ handle, core: null, input: searchInputSchema.parse({ q, limit: 10, match, mode: "fts", group: "chunk", syntax }), tuning: { exactFormBoost: 0, proximity: { weight: 0, window: 5 } } });
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

void main();
