import DatabaseCtor from "better-sqlite3";
import type Database from "better-sqlite3";
import { preparedOnce } from "../db/statements";
import { BoundedMemo } from "./bounded-memo";
import { docsizeLength, indexStateOf } from "./fts5-bm25";

/**
 * What FTS5 stored, read without ranking: a table's tokenizer and totals, the tokens its tokenizer makes of a text
 * (the scratch table), the per-connection fts5vocab tables, and values kept per index state; shared by selective-match,
 * bm25-rows and the word lists.
 */

/**
 * The tokenize= argument of an FTS5 table, as declared: read once per connection (asked by every search; a table's
 * declaration changes only through a migration, run as a connection opens, as tableShape below also counts on).
 */
export function ftsTokenizerOf({ db, schema, table }: { db: Database.Database; schema: string; table: string }): string {
  const known = tokenizersOf.get(db)?.get(`${schema}.${table}`);
  if (known !== undefined) return known;
  const sql = (preparedOnce({ sqlite: db, sql: `select sql from ${schema}.sqlite_master where name = ?` }).get(table) as { sql: string } | undefined)?.sql;
  const m = sql?.match(/tokenize\s*=\s*(?:'((?:[^']|'')*)'|"((?:[^"]|"")*)")/i);
  const tokenize = m ? (m[1] ?? m[2]).replaceAll("''", "'") : "unicode61";
  // A table not there yet is asked again.
  if (sql !== undefined) tokenizersOf.set(db, (tokenizersOf.get(db) ?? new Map()).set(`${schema}.${table}`, tokenize));
  return tokenize;
}
const tokenizersOf = new WeakMap<Database.Database, Map<string, string>>();

/** A private in-memory FTS5 table per tokenizer and column count: the same text through the same tokenizer gives the counts and lengths FTS5 stored for the row. */
let scratchDb: Database.Database | null = null;
const scratchTables = new Map<string, { table: string; vocab: string }>();

export function emptyScratch({ db, table }: { db: Database.Database; table: string }): void {
  preparedOnce({ sqlite: db, sql: `insert into ${table}(${table}) values ('delete-all')` }).run();
}

export function scratchTable({ tokenize, columns }: { tokenize: string; columns: number }): { db: Database.Database; table: string; vocab: string } {
  const db = (scratchDb ??= new DatabaseCtor(":memory:"));
  const key = `${columns}\u0000${tokenize}`;
  let t = scratchTables.get(key);
  if (!t) {
    t = { table: `rescore_${scratchTables.size}`, vocab: `rescore_${scratchTables.size}_v` };
    const cols = Array.from({ length: columns }, (_, i) => `c${i}`).join(", ");
    // Contentless: only the index is wanted, and emptying it is one 'delete-all' (deleting rows of a table with content re-tokenizes each one).
    db.exec(`create virtual table ${t.table} using fts5(${cols}, content='', tokenize='${tokenize.replaceAll("'", "''")}')`);
    db.exec(`create virtual table ${t.vocab} using fts5vocab(${t.table}, 'instance')`);
    scratchTables.set(key, t);
  }
  return { db, ...t };
}

/** The tokens the tokenizer makes of each text, in order (what FTS5 looks up for a phrase of that text). */
export function tokenRowsOf({ tokenize, texts }: { tokenize: string; texts: string[] }): string[][] {
  const { db, table, vocab } = scratchTable({ tokenize, columns: 1 });
  const insert = preparedOnce({ sqlite: db, sql: `insert into ${table}(rowid, c0) values (?, ?)` });
  try {
    db.transaction(() => texts.forEach((t, i) => insert.run(i + 1, t)))();
    const out: string[][] = texts.map(() => []);
    for (const [term, doc] of preparedOnce({ sqlite: db, sql: `select term, doc from ${vocab} order by doc, "offset"`, mode: "raw" }).all() as [string, number][]) out[doc - 1].push(term);
    return out;
  } finally {
    emptyScratch({ db, table });
  }
}

/** Rows' texts through the scratch table: each row's length in tokens (all columns) and count of each of `tokens`, as FTS5 stored them, without reading doclists. */
export function scratchCounts({ tokenize, columns, rows, tokens }: { tokenize: string; columns: number; rows: { rowid: number; values: (string | null)[] }[]; tokens: string[] }): { length: Map<number, number>; tf: Map<number, Map<string, number>> } {
  const { db, table, vocab } = scratchTable({ tokenize, columns });
  const insert = preparedOnce({ sqlite: db, sql: `insert into ${table}(rowid, ${Array.from({ length: columns }, (_, i) => `c${i}`).join(", ")}) values (${Array.from({ length: columns + 1 }, () => "?").join(", ")})` });
  try {
    db.transaction(() => {
      for (const r of rows) insert.run(r.rowid, ...r.values);
    })();
    // Lengths from the table's own record of them (one varint per column), counts for the wanted tokens only.
    const length = new Map<number, number>();
    for (const [id, sz] of preparedOnce({ sqlite: db, sql: `select id, sz from ${table}_docsize`, mode: "raw" }).all() as [number, Buffer][]) length.set(id, docsizeLength(sz, columns));
    const tf = new Map<number, Map<string, number>>();
    // One token at a time, its instances' rows only: the term is never read back (a string per instance cost
    // several times as much for the instances of a thousand common words).
    const docs = preparedOnce({ sqlite: db, sql: `select doc from ${vocab} where term = ?`, mode: "pluck" });
    for (const term of new Set(tokens)) {
      for (const doc of docs.all(term) as number[]) {
        let m = tf.get(doc);
        if (!m) tf.set(doc, (m = new Map()));
        m.set(term, (m.get(term) ?? 0) + 1);
      }
    }
    return { length, tf };
  } finally {
    emptyScratch({ db, table });
  }
}

/** The temp fts5vocab tables ('row', 'instance') over schema.table on this connection, made on first use; null if they cannot be. */
export function vocabTables({ db, schema, table }: { db: Database.Database; schema: string; table: string }): { row: string; instance: string } | null {
  const base = `dm_vocab_${schema}_${table}`;
  const names = { row: `temp.${base}_row`, instance: `temp.${base}_instance` };
  const made = vocabMade.get(db) ?? new Set<string>();
  vocabMade.set(db, made);
  if (made.has(base)) return names;
  try {
    // `schema` and `table` are fixed by the callers (literals), never request text.
    db.exec(`create virtual table if not exists ${names.row} using fts5vocab(${schema}, ${table}, 'row');
             create virtual table if not exists ${names.instance} using fts5vocab(${schema}, ${table}, 'instance')`);
  } catch {
    return null;
  }
  // Made inside a transaction, they go if it rolls back: remembered only when made outside one.
  if (!db.inTransaction) made.add(base);
  return names;
}
const vocabMade = new WeakMap<Database.Database, Set<string>>();

/** The indexed columns of an FTS5 table, in order (its hidden table-named and rank columns left out). */
export function ftsColumnsOf({ db, schema, table }: { db: Database.Database; schema: string; table: string }): string[] {
  return preparedOnce({ sqlite: db, sql: `select name from pragma_table_info(?, ?)`, mode: "pluck" }).all(table, schema) as string[];
}

/** The tokenizer and column count of schema.table, read once per connection. */
export function tableShape({ db, schema, table }: { db: Database.Database; schema: string; table: string }): { tokenize: string; columns: number } {
  const shapes = shapesOf.get(db) ?? new Map<string, { tokenize: string; columns: number }>();
  shapesOf.set(db, shapes);
  const key = `${schema}.${table}`;
  let shape = shapes.get(key);
  if (!shape) {
    shape = { tokenize: ftsTokenizerOf({ db, schema, table }), columns: ftsColumnsOf({ db, schema, table }).length };
    shapes.set(key, shape);
  }
  return shape;
}
const shapesOf = new WeakMap<Database.Database, Map<string, { tokenize: string; columns: number }>>();

/** The one token each quoted phrase is under a tokenizer, or null when one is not exactly one token (kept for recent phrases). */
export function phraseTokens({ tokenize, phrases }: { tokenize: string; phrases: string[] }): string[] | null {
  const key = (p: string) => `${tokenize}\u0000${p}`;
  const unknown = phrases.filter((p) => !tokenCache.has(key(p)));
  if (unknown.length > 0) {
    const rows = tokenRowsOf({ tokenize, texts: unknown.map((p) => p.slice(1, -1).replaceAll('""', '"')) });
    unknown.forEach((p, i) => tokenCache.set(key(p), rows[i].length === 1 ? rows[i][0] : null));
    while (tokenCache.size > MAX_CACHED_TOKENS) tokenCache.delete(tokenCache.keys().next().value!);
  }
  const tokens = phrases.map((p) => tokenCache.get(key(p)));
  return tokens.every((t): t is string => typeof t === "string") ? tokens : null;
}
const MAX_CACHED_TOKENS = 10_000;
const tokenCache = new Map<string, string | null>();

const databaseFiles = new WeakMap<Database.Database, Map<string, string>>();

/** The file behind an attached schema ('' for an in-memory or temporary database, whose values are never kept). */
export function databaseFileOf({ db, schema }: { db: Database.Database; schema: string }): string {
  // Asked several times a search; a schema's file is fixed while the connection is open (nothing detaches), and the pragma costs more than the reads it keys.
  const known = databaseFiles.get(db)?.get(schema);
  if (known !== undefined) return known;
  const file = (preparedOnce({ sqlite: db, sql: "select file from pragma_database_list where name = ?", mode: "pluck" }).get(schema) as string | undefined) ?? "";
  if (file) databaseFiles.set(db, (databaseFiles.get(db) ?? new Map()).set(schema, file));
  return file;
}

/** Values kept per index state: at most 4,096 (each a count or a bounded map of rows' counts). */
const stateMemos = ((globalThis as unknown as { __dualmindFtsStateMemo?: BoundedMemo<unknown> }).__dualmindFtsStateMemo ??= new BoundedMemo({ entries: 4096, bytes: Infinity }));

/** Forget every value kept per index state (a bench's or a test's "first sight"). */
export function clearIndexStateMemos(): void {
  stateMemos.clear();
}

/** `compute()` once per index state of schema.table (its structure record), for values that walk a doclist; not kept for in-memory databases. */
export function memoByIndexState<T>({ db, schema, table, key, compute }: { db: Database.Database; schema: string; table: string; key: string; compute: () => T }): T {
  const file = databaseFileOf({ db, schema });
  const state = file ? indexStateOf({ db, schema, table }) : null;
  if (!state) return compute();
  const k = `${file}\u0000${schema}\u0000${table}\u0000${key}`;
  const known = stateMemos.get(k, state);
  if (known !== undefined) return known as T;
  const value = compute();
  stateMemos.set({ key: k, state, value, valueBytes: 0 });
  return value;
}

/** A token's rows and instances in schema.table (fts5vocab 'row'), once per index state; null when the vocabulary table cannot be made. */
export function tokenStats({ db, schema, table, token }: { db: Database.Database; schema: string; table: string; token: string }): { rows: number; instances: number } | null {
  try {
    return memoByIndexState({
      db,
      schema,
      table,
      key: `vocab-row\u0000${token}`,
      compute: () => {
        const vocab = vocabTables({ db, schema, table });
        if (!vocab) throw NO_VOCABULARY;
        const r = preparedOnce({ sqlite: db, sql: `select doc, cnt from ${vocab.row} where term = ?` }).get(token) as { doc: number; cnt: number } | undefined;
        return { rows: r?.doc ?? 0, instances: r?.cnt ?? 0 };
      },
    });
  } catch (e) {
    if (e === NO_VOCABULARY) return null;
    throw e;
  }
}
const NO_VOCABULARY = Symbol("no fts5vocab table on this connection");

/** The rows a quoted one-token phrase matches, from the vocabulary (tokenStats); null when not one token or no vocabulary table (the caller counts). */
export function phraseRowCount({ db, schema, table, phrase }: { db: Database.Database; schema: string; table: string; phrase: string }): number | null {
  const token = phraseTokens({ tokenize: tableShape({ db, schema, table }).tokenize, phrases: [phrase] })?.[0];
  if (token === undefined) return null;
  return tokenStats({ db, schema, table, token })?.rows ?? null;
}
