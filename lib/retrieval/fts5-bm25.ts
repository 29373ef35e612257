import type Database from "better-sqlite3";
import type { Bm25Row } from "./bm25-top";
import { preparedOnce } from "../db/statements";

/**
 * FTS5's bm25 as fts5_aux.c computes it, and the records of an FTS5 table it
 * reads its numbers from. Every score computed outside FTS5 (word lists,
 * rows scored from their text, pruned rankings) goes through here, so it is
 * FTS5's own to the last bit: the same operations in the same order, with
 * idf's logarithm taken by SQLite's `ln` (the C library's `log`, as FTS5's;
 * JavaScript's Math.log may differ from it in the last bit).
 */

/** bm25's constants in FTS5 (fts5_aux.c). */
export const K1 = 1.2;
export const B = 0.75;

/**
 * One phrase's part of a row's score: `idf × tf·(k1+1) / (tf + k1·(1 − b + b·len/avgdl))`.
 * A row's score is the sum of its phrases' parts, added in expression order starting from 0.
 */
export function bm25Part(idf: number, tf: number, len: number, avgdl: number): number {
  return idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + (B * len) / avgdl)));
}

/** The most a phrase of this idf adds to any row's score (tf → ∞): the max-score bound. */
export const bm25Bound = (idf: number): number => idf * (K1 + 1);

/** FTS5's idf of a phrase found in `n` of `rows` rows: `log((nRow - nHit + 0.5) / (nHit + 0.5))`, floored at 1e-6. */
export function ftsIdf(db: Database.Database, rows: number, n: number): number {
  const x = preparedOnce({ sqlite: db, sql: "select ln(?)", mode: "pluck" }).get((rows - n + 0.5) / (n + 0.5)) as number;
  return x <= 0 ? 1e-6 : x;
}

/** SQLite varints (big-endian groups of 7 bits; FTS5's records use them) from the start of a blob. */
export function readVarints(block: Uint8Array, count: number): number[] {
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

/** A row's length in tokens (all columns) from its %_docsize record: one varint per column. */
export function docsizeLength(sz: Uint8Array, columns: number): number {
  return readVarints(sz, columns).reduce((a, b) => a + b, 0);
}

export type Totals = { rows: number; tokens: number };

/** FTS5's row count and total tokens (all columns): its averages record, rowid 1 of %_data, kept by every write. */
export function ftsTotals({ db, schema, table, columns }: { db: Database.Database; schema: string; table: string; columns: number }): Totals | null {
  const block = preparedOnce({ sqlite: db, sql: `select block from ${schema}.${table}_data where id = 1`, mode: "pluck" }).get() as Buffer | undefined;
  if (!block) return null;
  const [rows, ...perColumn] = readVarints(block, 1 + columns);
  if (!rows || perColumn.length !== columns) return null;
  return { rows, tokens: perColumn.reduce((a, b) => a + b, 0) };
}

/** FTS5's structure record of schema.table (rowid 10 of its %_data table), rewritten by every committed change to the index; base64. */
export function indexStateOf({ db, schema, table }: { db: Database.Database; schema: string; table: string }): string | null {
  const block = preparedOnce({ sqlite: db, sql: `select block from ${schema}.${table}_data where id = 10`, mode: "pluck" }).get() as Buffer | undefined;
  return block ? block.toString("base64") : null;
}

/**
 * The best `m` rows of `match` as FTS5 ranks them (`order by rank, rowid limit m`). FTS5 reads a LIMIT while the
 * statement is planned, so a bound `limit ?` makes SQLite plan the statement again on every run (about what a
 * selective MATCH itself costs): the limit is written into the SQL instead, rounded up to a power of two so a
 * connection keeps a few such statements, and the rows past `m` are dropped (the order is total: the same rows).
 */
export function rankedByBm25({ db, schema, table, match, m }: { db: Database.Database; schema: string; table: string; match: string; m: number }): Bm25Row[] {
  if (m <= 0) return [];
  const limit = 2 ** Math.ceil(Math.log2(m));
  const rows = preparedOnce({ sqlite: db, sql: `select rowid, bm25(${table}) as rank from ${schema}.${table} where ${table} match ? order by rank, rowid limit ${limit}` }).all(match) as Bm25Row[];
  return rows.length > m ? rows.slice(0, m) : rows;
}

/** How many rows `match` holds, counted up to `limit` (FTS5 stops there); `limit` is a constant of the caller's, written into the SQL (see rankedByBm25). */
export function matchCountUpTo({ db, schema, table, match, limit }: { db: Database.Database; schema: string; table: string; match: string; limit: number }): number {
  return preparedOnce({ sqlite: db, sql: `select count(*) from (select 1 from ${schema}.${table} where ${table} match ? limit ${Math.trunc(limit)})`, mode: "pluck" }).get(match) as number;
}
