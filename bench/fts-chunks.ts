import type { StoreHandle } from "../lib/db/connection";
import { startQueryBudget } from "../lib/db/query-budget";
import { chunkTokenizerOf, ftsMatchFor, openSearchReader, runFts, SEARCH_BUDGET_HINT, type FullTextHit, type HitRow } from "../lib/index/fulltext";
import type { SearchInput } from "../lib/index/search";
import { snippetFor, snippetsOf } from "../lib/retrieval";

/**
 * The chunk leg of full-text search alone, synchronously, best first by FTS5's bm25 (no exact-form or proximity
 * factor, no fusion): what the benches time beside in-memory engines. The product's entry point is searchStore.
 */
export function searchFullText({ handle, input, now = Date.now() }: { handle: StoreHandle; input: SearchInput; now?: number }): { results: FullTextHit[] } {
  const match = ftsMatchFor({ input, match: input.match ?? "all" });
  if (match === null) return { results: [] };
  const budget = startQueryBudget({ hint: SEARCH_BUDGET_HINT });
  const reader = openSearchReader({ handle, core: null });
  try {
    const hits: { schema: "main" | "core"; row: HitRow }[] = [];
    for (const [schema] of reader.schemas) for (const row of runFts({ reader, schema, match, input, take: input.offset + input.limit, now, budget })) hits.push({ schema, row });
    hits.sort((a, b) => a.row.rank - b.row.rank || a.row.id - b.row.id);
    const page = hits.slice(input.offset, input.offset + input.limit);
    const snippets = new Map(reader.schemas.map(([schema]) => [schema, snippetsOf({ tokenize: chunkTokenizerOf({ reader, schema }), match, rows: page.filter((h) => h.schema === schema).map((h) => h.row) })]));
    return { results: page.map(({ schema, row: r }) => ({ store: handle.store, id: r.id, chunk_id: r.chunkId, path: r.path, kind: r.kind, chunk_index: r.chunkIndex, score: -r.rank, updated_at: r.updatedAt, ...snippetFor({ raw: snippets.get(schema)!.get(r.id) ?? "", where: r }) })) };
  } finally {
    reader.release();
  }
}
