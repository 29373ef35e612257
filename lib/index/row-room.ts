import { sql } from "drizzle-orm";
import { dialect, engineStep, sqlRows, type Op } from "../db/port";
import { DERIVED_COST, rowBytes, STORE_USAGE_SQL } from "../db/store-usage";
import { arrayLiteral, rowTermsOf } from "./engines/pg-fulltext";
import { LEARNING_WORDS, NODE_WORDS, THOUGHT_WORDS, TRACE_WORDS, type RowWordTable } from "./engines/pg-words";
import { assertRoomFor, quotaLock, usageOf } from "./store-quota";

const WORD_TABLES: RowWordTable[] = [THOUGHT_WORDS, NODE_WORDS, TRACE_WORDS, LEARNING_WORDS];

/** A row's values by column name (a repository's camelCase field is its snake_case column). */
const byColumn = (values: Record<string, unknown>) => Object.fromEntries(Object.entries(values).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]));

/**
 * Before writing one row of `table` (a thought, a node, a trace), or replacing one (`replacing`: the row as it is now):
 * refused when what it adds at least would take the store past DUALMIND_MAX_STORE_BYTES, before it and its index
 * entries are written (the triggers still decide exactly): the row by the triggers' own rule, less the row it replaces,
 * and on PostgreSQL its word-list rows (a posting per distinct word, a term row per word the store does not hold yet;
 * a replacement frees at most its old postings and a term row per word it drops), under the store's quota lock so
 * concurrent writers see each other. A write that adds nothing is never refused.
 */
export function* assertRoomForRow({ store, table, values, replacing }: { store: string; table: string; values: Record<string, unknown>; replacing?: Record<string, unknown> }): Op<void> {
  const columns = byColumn(values);
  const old = replacing ? byColumn(replacing) : undefined;
  const engine = yield* dialect();
  let adds = rowBytes({ engine, table, values: columns }) - (old ? rowBytes({ engine, table, values: old }) : 0);
  const words = WORD_TABLES.find((t) => t.table === table);
  if (engine === "pg") {
    yield* engineStep({ sqlite: () => undefined, pg: async (tx) => void (await tx.execute(quotaLock(store))) });
    if (words) adds += yield* wordRowsLeastBytes({ table: words, now: columns, old });
  }
  assertRoomFor({ store, before: usageOf((yield* sqlRows<{ documents: unknown; bytes: unknown }>(sql.raw(STORE_USAGE_SQL)))[0]), adds });
}

const textsOf = (table: RowWordTable, columns: Record<string, unknown>) =>
  table.text.map((c) => (columns[c] === null || columns[c] === undefined ? null : typeof columns[c] === "string" ? (columns[c] as string) : JSON.stringify(columns[c])));

/** PostgreSQL's word-list rows one row of `table` adds at least (less what the row it replaces frees at most), tokenized as its write will. */
function* wordRowsLeastBytes({ table, now, old }: { table: RowWordTable; now: Record<string, unknown>; old?: Record<string, unknown> }): Op<number> {
  const cost = DERIVED_COST.pg.postings;
  const [terms, before] = rowTermsOf({ tokenize: table.tokenize, columns: table.columns, rows: old ? [textsOf(table, now), textsOf(table, old)] : [textsOf(table, now)] });
  const held = before ? [...before.tf.keys()] : [];
  const dropped = held.filter((t) => !terms?.tf.has(t)).length;
  let fresh = 0;
  if (terms && terms.tf.size > 0) {
    const [row] = yield* sqlRows<{ n: unknown }>(
      sql`select count(*) as n from unnest(${arrayLiteral([...terms.tf.keys()])}::text[]) u(t) where not exists (select 1 from word_terms w where w.tbl = ${table.tbl} and w.term = u.t)`,
    );
    fresh = Number(row?.n ?? 0);
  }
  return ((terms?.tf.size ?? 0) - held.length) * cost.word_postings + (fresh - dropped) * cost.word_terms;
}
