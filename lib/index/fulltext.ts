import type Database from "better-sqlite3";
import { openStoreReaderWithCore, type StoreHandle } from "../db/connection";
import { AppError } from "../errors";
import type { SearchInput } from "./search";

const MARK_OPEN = "\uE000";
const MARK_CLOSE = "\uE001";
const MAX_TOKENS = 32;

/** A chunk found by full-text search, with its bm25 score and highlighted snippet. */
export type FullTextHit = {
  store: string;
  id: number;
  chunkId: string;
  path: string;
  kind: string;
  chunkIndex: number;
  score: number;
  snippet: string;
  /** [start, end) offsets of matched terms within `snippet`. */
  highlights: [number, number][];
  updatedAt: number;
};

export type FullTextResult = { mode: "fts"; query: string; match: string | null; results: FullTextHit[]; hasMore: boolean; stores: string[] };

/**
 * Turn user text into a MATCH expression that means "these words": every
 * token is a double-quoted string, so operators, `*`, `NEAR(`, column
 * filters and stray quotes are only ever words. Null when nothing is left.
 */
export function toFtsMatch(text: string, match: "all" | "any" = "all"): string | null {
  const tokens = text.normalize("NFKC").match(/[\p{L}\p{N}\p{M}]+/gu) ?? [];
  const unique = [...new Set(tokens.map((t) => t.toLowerCase()))].slice(0, MAX_TOKENS);
  if (unique.length === 0) return null;
  return unique.map((t) => `"${t}"`).join(match === "any" ? " OR " : " ");
}

export function splitSnippet(raw: string): { snippet: string; highlights: [number, number][] } {
  let snippet = "";
  const highlights: [number, number][] = [];
  let open = -1;
  for (const ch of raw) {
    if (ch === MARK_OPEN) open = snippet.length;
    else if (ch === MARK_CLOSE) {
      if (open >= 0) highlights.push([open, snippet.length]);
      open = -1;
    } else snippet += ch;
  }
  return { snippet, highlights };
}

/** One bm25 match as runFts reads it (FTS5: raw SQL). */
export type HitRow = { id: number; chunkId: string; path: string; kind: string; chunkIndex: number; rank: number; snip: string; updatedAt: number };

/**
 * The filter part of a search (prefix, kind, tags, updated range, expired
 * memories) as SQL over `c` (chunks) and `d` (documents) in `schema`. Shared
 * by full-text and vector search so both filter the same way.
 */
export function chunkFilterSql({ schema, input, now }: { schema: "main" | "core"; input: SearchInput; now: number }): { where: string[]; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  if (input.prefix) {
    where.push("substr(d.path, 1, length(?)) = ?");
    args.push(input.prefix, input.prefix);
  }
  if (input.kind?.length) {
    where.push(`d.kind in (${input.kind.map(() => "?").join(", ")})`);
    args.push(...input.kind);
  }
  if (input.updated_after !== undefined) {
    where.push("d.mtime >= ?");
    args.push(input.updated_after);
  }
  if (input.updated_before !== undefined) {
    where.push("d.mtime < ?");
    args.push(input.updated_before);
  }
  // A memory document's row in `memories` is at path minus 'memory/' and '.md'.
  const memoryOf = `${schema}.memories m where d.kind = 'memory' and m.path = substr(d.path, 8, length(d.path) - 10)`;
  if (input.tags?.length) {
    where.push(`exists (select 1 from ${memoryOf} and exists (select 1 from json_each(m.tags) t where t.value in (${input.tags.map(() => "?").join(", ")})))`);
    args.push(...input.tags);
  }
  if (!input.include_expired) {
    where.push(`not exists (select 1 from ${memoryOf} and m.expires_at is not null and m.expires_at <= ?)`);
    args.push(now);
  }
  return { where, args };
}

/** Whether the caller narrowed the search beyond the default (expired memories hidden). */
export function hasExplicitFilters(input: SearchInput): boolean {
  return !!(input.prefix || input.kind?.length || input.tags?.length || input.updated_after !== undefined || input.updated_before !== undefined);
}

/**
 * Where a search reads: the store's own connection, or (with core) a
 * read-only connection with core attached, so nothing here can write to core.
 * Callers close it with `release`.
 */
export type SearchReader = { sqlite: Database.Database; schemas: ["main" | "core", string][]; release: () => void };

export function openSearchReader({ handle, core }: { handle: StoreHandle; core: StoreHandle | null }): SearchReader {
  if (!core) return { sqlite: handle.sqlite, schemas: [["main", handle.store]], release: () => {} };
  const reader = openStoreReaderWithCore({ handle, core });
  return { sqlite: reader, schemas: [["main", handle.store], ["core", core.store]], release: () => reader.close() };
}

export function runFts({ reader, schema, match, input, take, now }: { reader: SearchReader; schema: "main" | "core"; match: string; input: SearchInput; take: number; now: number }): HitRow[] {
  const filters = chunkFilterSql({ schema, input, now });
  const where = ["chunks_fts match ?", ...filters.where];
  const args: unknown[] = [match, ...filters.args];
  // `schema` is one of two literals, never request text.
  const sql = `select c.id, c.chunk_id as chunkId, d.path, d.kind, c.chunk_index as chunkIndex, d.mtime as updatedAt,
      bm25(chunks_fts) as rank, snippet(chunks_fts, 0, '${MARK_OPEN}', '${MARK_CLOSE}', '…', 24) as snip
    from ${schema}.chunks_fts join ${schema}.chunks c on c.id = chunks_fts.rowid join ${schema}.documents d on d.doc_id = c.doc_id
    where ${where.join(" and ")} order by rank, c.id limit ?`;
  try {
    return reader.sqlite.prepare(sql).all(...args, take) as HitRow[];
  } catch (e) {
    // The statement itself is fixed and valid, so with advanced syntax an SQLITE_ERROR is the caller's
    // expression (syntax, unknown column, unterminated string). Plain queries are built to be valid.
    if (input.syntax === "fts5" && e instanceof Error && (e as Error & { code?: string }).code === "SQLITE_ERROR") {
      throw new AppError("invalid_request", `invalid fts5 query: ${e.message}`, [{ path: "q", message: e.message }]);
    }
    throw e;
  }
}

/** The MATCH expression for the user's text: plain words (quoted), or the caller's own fts5 syntax when asked. */
export function matchFor(input: SearchInput, match: "all" | "any"): string | null {
  if (input.syntax === "fts5") return input.q.trim() === "" ? null : input.q;
  return toFtsMatch(input.q, match);
}

/** Full-text search over a store's chunks (and core's, read-only, when `core` is given), best first. */
export function searchFullText({ handle, core, input, now = Date.now() }: { handle: StoreHandle; core: StoreHandle | null; input: SearchInput; now?: number }): FullTextResult {
  const match = matchFor(input, input.match ?? "all");
  const stores = core ? [handle.store, core.store] : [handle.store];
  if (match === null) return { mode: "fts", query: input.q, match, results: [], hasMore: false, stores };
  const take = input.offset + input.limit + 1;
  const reader = openSearchReader({ handle, core });
  try {
    const hits: FullTextHit[] = [];
    for (const [schema, name] of reader.schemas) {
      for (const r of runFts({ reader, schema, match, input, take, now })) {
        hits.push({ store: name, id: r.id, chunkId: r.chunkId, path: r.path, kind: r.kind, chunkIndex: r.chunkIndex, score: -r.rank, updatedAt: r.updatedAt, ...splitSnippet(r.snip) });
      }
    }
    hits.sort((a, b) => b.score - a.score || (a.store === b.store ? a.id - b.id : a.store < b.store ? -1 : 1));
    const page = hits.slice(input.offset, input.offset + input.limit);
    return { mode: "fts", query: input.q, match, results: page, hasMore: hits.length > input.offset + input.limit, stores };
  } finally {
    reader.release();
  }
}
