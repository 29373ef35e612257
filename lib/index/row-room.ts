import { sql } from "drizzle-orm";
import { dialect, engineStep, sqlRows, type Op } from "../db/port";
import { DERIVED_COST, rowBytes, STORE_USAGE_SQL } from "../db/store-usage";
import { arrayLiteral, rowTermsOf } from "./engines/pg-fulltext";
import { LEARNING_WORDS, NODE_WORDS, THOUGHT_WORDS, TRACE_WORDS, type RowWordTable } from "./engines/pg-words";
import { assertRoomFor, quotaLock, usageOf } from "./store-quota";

const WORD_TABLES: RowWordTable[] = [THOUGHT_WORDS, NODE_WORDS, TRACE_WORDS, LEARNING_WORDS];

/**
 * Before writing one row of `table` (a thought, a node, a trace): refused when what it counts at least would take the
 * store past DUALMIND_MAX_STORE_BYTES, before it and its index entries are written (the triggers still decide
 * exactly): the row by the triggers' own rule, and on PostgreSQL its word-list rows (a posting per distinct word, a
 * term row per word the store does not hold yet), under the store's quota lock so concurrent writers see each other.
 */
export function* assertRoomForRow({ store, table, values }: { store: string; table: string; values: Record<string, unknown> }): Op<void> {
  // The row's values by column name (a repository's camelCase field is its snake_case column).
  const columns = Object.fromEntries(Object.entries(values).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]));
  const engine = yield* dialect();
  let adds = rowBytes({ engine, table, values: columns });
  const words = WORD_TABLES.find((t) => t.table === table);
  if (engine === "pg") {
    yield* engineStep({ sqlite: () => undefined, pg: async (tx) => void (await tx.execute(quotaLock(store))) });
    if (words) adds += yield* wordRowsLeastBytes({ table: words, texts: words.text.map((c) => (columns[c] === null || columns[c] === undefined ? null : typeof columns[c] === "string" ? (columns[c] as string) : JSON.stringify(columns[c]))) });
  }
  assertRoomFor({ store, before: usageOf((yield* sqlRows<{ documents: unknown; bytes: unknown }>(sql.raw(STORE_USAGE_SQL)))[0]), adds });
}

/** PostgreSQL's word-list rows one row of `table` adds at least, tokenized as its write will. */
function* wordRowsLeastBytes({ table, texts }: { table: RowWordTable; texts: (string | null)[] }): Op<number> {
  const cost = DERIVED_COST.pg.postings;
  const [terms] = rowTermsOf({ tokenize: table.tokenize, columns: table.columns, rows: [texts] });
  if (!terms || terms.tf.size === 0) return 0;
  const [fresh] = yield* sqlRows<{ n: unknown }>(
    sql`select count(*) as n from unnest(${arrayLiteral([...terms.tf.keys()])}::text[]) u(t) where not exists (select 1 from word_terms w where w.tbl = ${table.tbl} and w.term = u.t)`,
  );
  return terms.tf.size * cost.word_postings + Number(fresh?.n ?? 0) * cost.word_terms;
}
