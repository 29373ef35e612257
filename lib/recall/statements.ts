import { sql } from "drizzle-orm";
import { engineStep, type Op } from "../db/port";
import { preparedOnce } from "../db/statements";

/**
 * The rows of a statement without parameters that both engines run as written, prepared once per SQLite
 * connection: every recall runs a few such one-row reads (its settings, the log's running sum), and preparing
 * them cost more than reading.
 */
export function fixedRows<R>(text: string): Op<R[]> {
  return engineStep({
    sqlite: (h) => preparedOnce({ sqlite: h.sqlite, sql: text }).all() as R[],
    pg: async (tx) => (await tx.execute(sql.raw(text))).rows as R[],
  });
}
