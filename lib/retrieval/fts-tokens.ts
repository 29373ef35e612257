import DatabaseCtor from "better-sqlite3";
import type Database from "better-sqlite3";
import { preparedOnce } from "../db/statements";

/**
 * What FTS5 stored, read without ranking: a table's tokenizer and totals,
 * the tokens its tokenizer makes of a text (a private in-memory FTS5 table
 * with the same tokenizer: the scratch table), and the per-connection temp
 * fts5vocab tables over an index. Shared by the pruned rankings
 * (selective-match), the row scorer (bm25-rows) and the broad planner
 * (bm25-top), none of which depends on another for them.
 */

/** The tokenize= argument of an FTS5 table, as declared. */
export function ftsTokenizerOf({ db, schema, table }: { db: Database.Database; schema: string; table: string }): string {
  const sql = (preparedOnce(db, `select sql from ${schema}.sqlite_master where name = ?`).get(table) as { sql: string } | undefined)?.sql ?? "";
  const m = sql.match(/tokenize\s*=\s*(?:'((?:[^']|'')*)'|"((?:[^"]|"")*)")/i);
  return m ? (m[1] ?? m[2]).replaceAll("''", "'") : "unicode61";
}

/** SQLite varints (big-endian groups of 7 bits; FTS5's records use them) from the start of a blob. */
export function readVarints(block: Buffer, count: number): number[] {
  const out: number[] = [];
  let i = 0;
  while (out.length < count && i < block.length) {
    let n = 0;
    for (let j = 0; j < 9 && i < block.length; j++) {
      const byte = block[i++];
      if (j === 8) {
        n = n * 256 + byte;
        break;
      }
      n = n * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) break;
    }
    out.push(n);
  }
  return out;
}

export type Totals = { rows: number; tokens: number };

/** FTS5's row count and total tokens (all columns): its averages record, rowid 1 of %_data, kept by every write. */
export function ftsTotals({ db, schema, table, columns }: { db: Database.Database; schema: string; table: string; columns: number }): Totals | null {
  const block = preparedOnce(db, `select block from ${schema}.${table}_data where id = 1`, "pluck").get() as Buffer | undefined;
  if (!block) return null;
  const [rows, ...perColumn] = readVarints(block, 1 + columns);
  if (!rows || perColumn.length !== columns) return null;
  return { rows, tokens: perColumn.reduce((a, b) => a + b, 0) };
}

/**
 * A private in-memory FTS5 table per tokenizer and column count: the same
 * text through the same tokenizer gives the index's own tokens, so term
 * counts and lengths read from it are what FTS5 stored for the row.
 */
let scratchDb: Database.Database | null = null;
const scratchTables = new Map<string, { table: string; vocab: string }>();

export function emptyScratch(db: Database.Database, table: string): void {
  preparedOnce(db, `insert into ${table}(${table}) values ('delete-all')`).run();
}

export function scratchTable(tokenize: string, columns: number): { db: Database.Database; table: string; vocab: string } {
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
  const { db, table, vocab } = scratchTable(tokenize, 1);
  const insert = preparedOnce(db, `insert into ${table}(rowid, c0) values (?, ?)`);
  try {
    db.transaction(() => texts.forEach((t, i) => insert.run(i + 1, t)))();
    const out: string[][] = texts.map(() => []);
    for (const [term, doc] of preparedOnce(db, `select term, doc from ${vocab} order by doc, "offset"`, "raw").all() as [string, number][]) out[doc - 1].push(term);
    return out;
  } finally {
    emptyScratch(db, table);
  }
}

/**
 * Rows' texts through the scratch table (the index's tokenizer): each row's
 * length in tokens (all columns) and its count of each of `tokens` — what
 * FTS5 stored for a row of that text, without reading the index's doclists.
 */
export function scratchCounts({ tokenize, columns, rows, tokens }: { tokenize: string; columns: number; rows: { rowid: number; values: (string | null)[] }[]; tokens: string[] }): { length: Map<number, number>; tf: Map<number, Map<string, number>> } {
  const { db, table, vocab } = scratchTable(tokenize, columns);
  const insert = preparedOnce(db, `insert into ${table}(rowid, ${Array.from({ length: columns }, (_, i) => `c${i}`).join(", ")}) values (${Array.from({ length: columns + 1 }, () => "?").join(", ")})`);
  try {
    db.transaction(() => {
      for (const r of rows) insert.run(r.rowid, ...r.values);
    })();
    // Lengths from the table's own record of them (one varint per column), counts for the wanted tokens only.
    const length = new Map<number, number>();
    for (const [id, sz] of preparedOnce(db, `select id, sz from ${table}_docsize`, "raw").all() as [number, Buffer][]) length.set(id, readVarints(sz, columns).reduce((a, b) => a + b, 0));
    const tf = new Map<number, Map<string, number>>();
    // One token at a time, its instances' rows only: the term is never read back (a string per instance: 1.1 s vs
    // 0.2 s for the 467k instances of 1022 common words in 4096 chunks).
    const docs = preparedOnce(db, `select doc from ${vocab} where term = ?`, "pluck");
    for (const term of new Set(tokens)) {
      for (const doc of docs.all(term) as number[]) {
        let m = tf.get(doc);
        if (!m) tf.set(doc, (m = new Map()));
        m.set(term, (m.get(term) ?? 0) + 1);
      }
    }
    return { length, tf };
  } finally {
    emptyScratch(db, table);
  }
}

/** The temp fts5vocab tables ('row', 'instance') over schema.table on this connection, made on first use; null if they cannot be. */
export function vocabTables(db: Database.Database, schema: string, table: string): { row: string; instance: string } | null {
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

/** The tokenizer and column count of schema.table, read once per connection. */
export function tableShape(db: Database.Database, schema: string, table: string): { tokenize: string; columns: number } {
  const shapes = shapesOf.get(db) ?? new Map<string, { tokenize: string; columns: number }>();
  shapesOf.set(db, shapes);
  const key = `${schema}.${table}`;
  let shape = shapes.get(key);
  if (!shape) {
    const columns = (preparedOnce(db, `select count(*) as n from pragma_table_xinfo(?, ?) where hidden = 0`).get(table, schema) as { n: number }).n;
    shape = { tokenize: ftsTokenizerOf({ db, schema, table }), columns };
    shapes.set(key, shape);
  }
  return shape;
}
const shapesOf = new WeakMap<Database.Database, Map<string, { tokenize: string; columns: number }>>();

/** The one token each quoted phrase is under a tokenizer, or null when one is not exactly one token (kept for recent phrases). */
export function phraseTokens(tokenize: string, phrases: string[]): string[] | null {
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

/**
 * FTS5's idf of a phrase found in `n` of `rows` rows, to the last bit:
 * fts5_aux.c's `log((nRow - nHit + 0.5) / (nHit + 0.5))`, floored at 1e-6,
 * with the logarithm taken by SQLite's own `ln` (the C library's `log`, as
 * FTS5's): JavaScript's Math.log may differ from it in the last bit.
 */
export function ftsIdf(db: Database.Database, rows: number, n: number): number {
  const x = preparedOnce(db, "select ln(?)", "pluck").get((rows - n + 0.5) / (n + 0.5)) as number;
  return x <= 0 ? 1e-6 : x;
}
