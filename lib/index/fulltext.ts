import type Database from "better-sqlite3";
import { openStoreReaderWithCore, type StoreHandle } from "../db/connection";
import { runWithinBudget, type QueryBudget } from "../db/query-budget";
import { AppError } from "../errors";
import { preparedOnce } from "../db/statements";
import { broadTopWithinBudget, buildFtsMatch, ftsTokenizerOf, rankedByBm25, type Bm25Plan, type Bm25Row } from "../retrieval";
import type { SearchInput } from "./search";
import { hiddenMemoryDocumentSql, type HiddenRowsFilter } from "./item-state";

/** A chunk found by full-text search, with its bm25 score and highlighted snippet. */
export type FullTextHit = {
  store: string;
  id: number;
  chunk_id: string;
  path: string;
  kind: string;
  chunk_index: number;
  score: number;
  snippet: string;
  /** [start, end) offsets of matched terms within `snippet`. */
  highlights: [number, number][];
  updated_at: number;
};

/**
 * Bounds on an advanced (`syntax=fts5`) expression, checked before MATCH: FTS5's cost grows with its phrases (each
 * prefix term merges the doclists of every word it expands to). The query budget interrupts what still runs long;
 * these answer the obvious cases at once with a 400 naming the limit, and are the only bound without the budget extension.
 */
export const FTS5_LIMITS = {
  /** Words in the whole expression (plain search keeps 32 too). */
  terms: 32,
  /** Terms ending in `*`: a one-letter prefix (`a*`) expands to a large part of the vocabulary. */
  prefixTerms: 4,
  /** Characters before a `*`. */
  prefixChars: 2,
  nearGroups: 4,
  /** Words in one phrase ("…" or a + b). */
  phraseTerms: 16,
} as const;

/** An FTS5 bareword character (as FTS5 reads them): non-ASCII, ASCII letter or digit, `_`, or 0x1A. */
const BAREWORD = /[^\x00-\x7F]|[A-Za-z0-9_\x1A]/;
const WORDS = /[\p{L}\p{N}\p{M}]+/gu;

type Fts5Token = { type: "string"; text: string; bare: boolean } | { type: "punct"; text: string };

/** Split an FTS5 expression into strings (quoted or bare) and punctuation, as FTS5's own lexer does. */
function lexFts5(q: string): Fts5Token[] {
  const tokens: Fts5Token[] = [];
  for (let i = 0; i < q.length; ) {
    const c = q[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '"') {
      let text = "";
      let j = i + 1;
      for (; j < q.length; j++) {
        if (q[j] !== '"') text += q[j];
        else if (q[j + 1] === '"') text += q[j++];
        else break;
      }
      tokens.push({ type: "string", text, bare: false });
      i = j + 1;
    } else if (BAREWORD.test(c)) {
      let j = i;
      while (j < q.length && BAREWORD.test(q[j])) j++;
      tokens.push({ type: "string", text: q.slice(i, j), bare: true });
      i = j;
    } else {
      tokens.push({ type: "punct", text: c });
      i++;
    }
  }
  return tokens;
}

/**
 * Reject an FTS5 expression past FTS5_LIMITS (terms, prefix terms, NEAR groups, phrase lengths) with a 400 naming the
 * limit. Reads just enough of the grammar to count; anything else is left to FTS5, whose syntax errors are a 400.
 */
export function checkFts5Expression(q: string): void {
  const tokens = lexFts5(q);
  let terms = 0;
  let prefixTerms = 0;
  let shortPrefix: string | null = null;
  let nearGroups = 0;
  let longestPhrase = 0;
  let phrase = 0;
  let nearDepth = 0;
  const at = (k: number) => tokens[k] as Fts5Token | undefined;
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    if (t.type === "punct") {
      if (t.text === "{") {
        // `{a b}:` names columns, not terms.
        while (k < tokens.length && tokens[k].text !== "}") k++;
      } else if (t.text === ")" && nearDepth > 0) {
        nearDepth--;
      } else if (t.text === "," && nearDepth > 0 && at(k + 1)?.type === "string" && /^[0-9]+$/.test(at(k + 1)!.text)) {
        k++; // NEAR(…, N): the distance is not a term.
      }
      if (t.text !== "+" && t.text !== "*" && t.text !== "^") phrase = 0;
      continue;
    }
    if (t.bare && (t.text === "AND" || t.text === "OR" || t.text === "NOT")) {
      phrase = 0;
      continue;
    }
    if (t.bare && t.text === "NEAR" && at(k + 1)?.text === "(") {
      nearGroups++;
      nearDepth++;
      k++;
      phrase = 0;
      continue;
    }
    if (at(k + 1)?.text === ":") {
      k++; // `col:` filters by column: not a term.
      continue;
    }
    const words = t.text.normalize("NFKC").match(WORDS) ?? [];
    terms += words.length;
    // `a + b` continues a phrase; any other string starts one.
    phrase = (at(k - 1)?.text === "+" ? phrase : 0) + words.length;
    longestPhrase = Math.max(longestPhrase, phrase);
    if (at(k + 1)?.text === "*" && words.length > 0) {
      prefixTerms++;
      const stem = words[words.length - 1];
      if ([...stem].length < FTS5_LIMITS.prefixChars) shortPrefix ??= stem;
    }
  }
  const over = (limit: keyof typeof FTS5_LIMITS, found: number, what: string) => {
    const message = `${what}; at most ${FTS5_LIMITS[limit]} allowed`;
    throw new AppError("invalid_request", `fts5 query too broad: ${message}. Narrow it, or use syntax=plain`, [{ path: "q", message, limit, max: FTS5_LIMITS[limit], found }]);
  };
  if (terms > FTS5_LIMITS.terms) over("terms", terms, `${terms} terms`);
  if (prefixTerms > FTS5_LIMITS.prefixTerms) over("prefixTerms", prefixTerms, `${prefixTerms} prefix terms (word*)`);
  if (shortPrefix !== null) over("prefixChars", [...shortPrefix].length, `prefix "${shortPrefix}*" has fewer than ${FTS5_LIMITS.prefixChars} characters before the *`);
  if (nearGroups > FTS5_LIMITS.nearGroups) over("nearGroups", nearGroups, `${nearGroups} NEAR groups`);
  if (longestPhrase > FTS5_LIMITS.phraseTerms) over("phraseTerms", longestPhrase, `a phrase of ${longestPhrase} words`);
}

/** One bm25 match as runFts reads it, with the chunk's whole text (its snippet is made only if shown: snippetsOf). */
export type HitRow = { id: number; chunkId: string; path: string; kind: string; chunkIndex: number; rank: number; updatedAt: number; text: string };

/** The tokenizer of a schema's chunks_fts, for snippetsOf. */
export function chunkTokenizerOf({ reader, schema }: { reader: SearchReader; schema: "main" | "core" }): string {
  return ftsTokenizerOf({ db: reader.sqlite, schema, table: "chunks_fts" });
}

/** The filter part of a search as SQL over `c` (chunks) and `d` (documents) in `schema`, shared by full-text and vector search. */
export function chunkFilterSql({ schema, input, now, hidden = null }: { schema: "main" | "core"; input: SearchInput; now: number; /** The view's hidden memories (lib/index/item-state.ts), left out here. */ hidden?: HiddenRowsFilter }): { where: string[]; args: unknown[] } {
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
  if (hidden) where.push(hiddenMemoryDocumentSql({ filter: hidden, schema }));
  return { where, args };
}

/** Whether the caller narrowed the search beyond the default (expired memories hidden). */
export function hasExplicitFilters(input: SearchInput): boolean {
  return !!(input.prefix || input.kind?.length || input.tags?.length || input.updated_after !== undefined || input.updated_before !== undefined);
}

/** The hint a timed-out search gives: how to narrow it. */
export const SEARCH_BUDGET_HINT = "narrow it: fewer or rarer words, longer prefixes, fewer OR alternatives, or filters (prefix, kind, tags, updated_after)";

/** The MATCH expression of a search: the caller's own for syntax=fts5 (within FTS5_LIMITS), else its words quoted; null when nothing to match. */
export function ftsMatchFor({ input, match, stopwords = "drop" }: { input: SearchInput; match: "all" | "any"; stopwords?: "drop" | "keep" }): string | null {
  if (input.syntax !== "fts5") return buildFtsMatch(input.q, { match, stopwords });
  if (input.q.trim() === "") return null;
  checkFts5Expression(input.q);
  return input.q;
}

/** Where a search reads: the store's own connection, or a read-only one with core attached (nothing here can write to core); callers `release` it. */
export type SearchReader = { sqlite: Database.Database; schemas: ["main" | "core", string][]; release: () => void };

export function openSearchReader({ handle, core }: { handle: StoreHandle; core: StoreHandle | null }): SearchReader {
  if (!core) return { sqlite: handle.sqlite, schemas: [["main", handle.store]], release: () => {} };
  const reader = openStoreReaderWithCore({ handle, core });
  return { sqlite: reader, schemas: [["main", handle.store], ["core", core.store]], release: () => reader.close() };
}

export function runFts({
  reader,
  schema,
  match,
  input,
  take,
  now,
  budget,
  hidden = null,
  onPlan,
}: {
  reader: SearchReader;
  schema: "main" | "core";
  match: string;
  input: SearchInput;
  take: number;
  now: number;
  budget: QueryBudget;
  /** The view's hidden memories of this schema's store, left out as the rows are ranked (chunkFilterSql). */
  hidden?: HiddenRowsFilter;
  /** Told how a broad query was answered (explain output); not called for the exhaustive path. */
  onPlan?: (plan: Bm25Plan) => void;
}): HitRow[] {
  const filters = chunkFilterSql({ schema, input, now, hidden });
  try {
    // Broad expressions (thousands of matches) are ranked from the table's word lists when it has them, exactly as below.
    const broad = broadTopWithinBudget({ db: reader.sqlite, schema, table: "chunks_fts", match, budget });
    if (broad) {
      onPlan?.(broad.plan);
      return runWithinBudget({ sqlite: reader.sqlite, budget, fn: () => pageOfRankedHits({ reader, schema, filters, take, top: broad.top }) });
    }
    if (!hasExplicitFilters(input)) {
      // Only the default filters (expired memories, the view's hidden ones): rank over the FTS table alone, then join and filter just the best rows.
      // Joining chunks and documents and testing the filter for every match costs several times the ranking itself.
      return runWithinBudget({ sqlite: reader.sqlite, budget, fn: () => pageOfRankedHits({ reader, schema, filters, take, top: (m) => rankedByBm25({ db: reader.sqlite, schema, table: "chunks_fts", match, m }) }) });
    }
    const where = ["chunks_fts match ?", ...filters.where];
    const args: unknown[] = [match, ...filters.args];
    // `schema` is one of two literals, never request text.
    const sql = `select c.id, c.chunk_id as chunkId, d.path, d.kind, c.chunk_index as chunkIndex, d.mtime as updatedAt,
        bm25(chunks_fts) as rank, c.text
      from ${schema}.chunks_fts join ${schema}.chunks c on c.id = chunks_fts.rowid join ${schema}.documents d on d.doc_id = c.doc_id
      where ${where.join(" and ")} order by rank, c.id limit ?`;
    const statement = reader.sqlite.prepare(sql);
    return runWithinBudget({ sqlite: reader.sqlite, budget, fn: () => statement.all(...args, take) as HitRow[] });
  } catch (e) {
    // The statement itself is fixed and valid, so with advanced syntax an SQLITE_ERROR is the caller's
    // expression (syntax, unknown column, unterminated string). Plain queries are built to be valid.
    if (input.syntax === "fts5" && e instanceof Error && (e as Error & { code?: string }).code === "SQLITE_ERROR") {
      throw new AppError("invalid_request", `invalid fts5 query: ${e.message}`, [{ path: "q", message: e.message }]);
    }
    throw e;
  }
}

type ChunkRowDetail = Omit<HitRow, "rank">;

/** The first `take` ranked rows the filters keep, with their details, read in growing batches (the filters may drop some). */
function pageOfRankedHits({ reader, schema, filters, take, top }: { reader: SearchReader; schema: "main" | "core"; filters: { where: string[]; args: unknown[] }; take: number; top: (m: number) => Bm25Row[] }): HitRow[] {
  // Fixed text per schema and filter shape: prepared once per connection.
  const details = preparedOnce({
    sqlite: reader.sqlite,
    sql: `select c.id, c.chunk_id as chunkId, d.path, d.kind, c.chunk_index as chunkIndex, d.mtime as updatedAt, c.text
     from ${schema}.chunks c join ${schema}.documents d on d.doc_id = c.doc_id
     where c.id in (select value from json_each(?))${filters.where.map((w) => ` and ${w}`).join("")}`,
  });
  let kept: { row: Bm25Row; detail: ChunkRowDetail }[] = [];
  for (let m = take + 16; ; m *= 4) {
    const rows = top(m);
    const found = new Map((details.all(JSON.stringify(rows.map((r) => r.rowid)), ...filters.args) as ChunkRowDetail[]).map((d) => [d.id, d]));
    kept = rows.flatMap((row) => (found.has(row.rowid) ? [{ row, detail: found.get(row.rowid)! }] : []));
    if (kept.length >= take || rows.length < m) break;
  }
  return kept.slice(0, take).map(({ row, detail }) => ({ ...detail, rank: row.rank }));
}
