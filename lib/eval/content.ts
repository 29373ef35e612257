import { sql, type SQL } from "drizzle-orm";
import { currentEngine } from "../db/engine";
import { read, sqlRows, type AnyStoreHandle } from "../db/port";
import { storeEngineOf } from "../stores/backend";
import { PROBE_KINDS, type ProbeKind, type ProbeSource } from "./probes";

/**
 * What self-recall reads of a store: every item's answer key and content
 * hash (to sample and to notice change), and the texts of the few items a
 * probe set is drawn from. One SQL text per question for both databases:
 * the store's tables have the same names and columns on SQLite and in a
 * store's PostgreSQL schema.
 */
export type StoreReader = { dialect: "sqlite" | "pg"; rows: <T>(query: SQL) => Promise<T[]> };

/** The store opened on this process's engine (404 when unknown). */
export const openStoreHere = (store: string): Promise<AnyStoreHandle> => storeEngineOf(currentEngine()).open(store);

export async function storeReader(store: string): Promise<StoreReader> {
  const handle = await openStoreHere(store);
  return { dialect: handle.kind === "pg" ? "pg" : "sqlite", rows: async <T>(query: SQL) => read(handle, sqlRows<T>(query)) };
}

/** A document's or memory's chunks in order. */
const chunkTexts = (keys: SQL) => sql`select d.path as key, d.sha256 as hash, c.text as text from documents d join chunks c on c.doc_id = d.doc_id where d.path in (${keys}) order by d.path, c.chunk_index`;

/** Each kind's table, key, hash and text columns (fixed literals, never input). */
const SOURCES: Record<ProbeKind, { keys: SQL; texts: (keys: SQL) => SQL }> = {
  document: { keys: sql`select path as key, sha256 as hash from documents where kind <> 'memory'`, texts: chunkTexts },
  memory: { keys: sql`select path as key, sha256 as hash from documents where kind = 'memory'`, texts: chunkTexts },
  trace: {
    keys: sql`select cast(id as text) as key, descriptor_hash as hash from reasoning_traces`,
    texts: (keys) => sql`select cast(id as text) as key, descriptor_hash as hash, summary_descriptor as text from reasoning_traces where cast(id as text) in (${keys})`,
  },
  learning: {
    keys: sql`select cast(id as text) as key, handle_hash as hash from learnings`,
    texts: (keys) => sql`select cast(id as text) as key, handle_hash as hash, semantic_handle as text from learnings where cast(id as text) in (${keys})`,
  },
  thought: {
    keys: sql`select id as key, content_hash as hash from thoughts`,
    texts: (keys) => sql`select id as key, content_hash as hash, content as text from thoughts where id in (${keys})`,
  },
};

export type StoreCandidates = Record<ProbeKind, { key: string; hash: string }[]>;

/** Every item's key and content hash, per kind. */
export async function listProbeCandidates(reader: StoreReader): Promise<StoreCandidates> {
  const out = {} as StoreCandidates;
  for (const kind of PROBE_KINDS) out[kind] = (await reader.rows<{ key: string; hash: string }>(SOURCES[kind].keys)).map((r) => ({ key: String(r.key), hash: String(r.hash) }));
  return out;
}

/** The texts of the named items of one kind (a document's chunks in order). */
export async function readProbeSources(reader: StoreReader, kind: ProbeKind, keys: string[]): Promise<ProbeSource[]> {
  if (keys.length === 0) return [];
  const rows = await reader.rows<{ key: string; hash: string; text: string }>(SOURCES[kind].texts(sql.join(keys.map((k) => sql`${k}`), sql`, `)));
  const byKey = new Map<string, ProbeSource>();
  for (const r of rows) {
    const key = String(r.key);
    const source = byKey.get(key) ?? { kind, key, hash: String(r.hash), texts: [] };
    source.texts.push(r.text);
    byKey.set(key, source);
  }
  return [...byKey.values()];
}

/** The words a shared-sentence check looks for verbatim: the sentence's first few, as they are written in running text. */
const SHARED_PHRASE_WORDS = 6;

/**
 * Is the sentence also in another document? Its opening words are looked
 * for verbatim in every other document's chunks (once per probe drawn, once
 * per probe set). The full-text index finds the chunks holding those words
 * as a phrase, and only those are read for the verbatim text, so a check
 * costs an index lookup, not a read of every chunk (which would stall the
 * process on a big store). Words split by markup or a line break are not
 * found anywhere, and the sentence is then kept.
 */
export function sharedSentenceCheck(reader: StoreReader): (sentence: string, key: string) => Promise<boolean> {
  return async (sentence, key) => {
    const phrase = sentence.split(" ").slice(0, SHARED_PHRASE_WORDS).join(" ");
    if (reader.dialect === "pg") {
      // A phrase of stop words alone is no tsquery: those chunks are read whole.
      const tsq = sql`phraseto_tsquery('english', ${phrase})`;
      const rows = await reader.rows<{ path: string }>(
        sql`select d.path as path from chunks c join documents d on d.doc_id = c.doc_id where (numnode(${tsq}) = 0 or c.tsv @@ ${tsq}) and strpos(c.text, ${phrase}) > 0 and d.path <> ${key} limit 1`,
      );
      return rows.length > 0;
    }
    const match = `"${phrase.replaceAll('"', '""')}"`;
    const indexed = sql`select d.path as path from chunks_fts f join chunks c on c.id = f.rowid join documents d on d.doc_id = c.doc_id where chunks_fts match ${match} and instr(c.text, ${phrase}) > 0 and d.path <> ${key} limit 1`;
    const scanned = sql`select d.path as path from chunks c join documents d on d.doc_id = c.doc_id where instr(c.text, ${phrase}) > 0 and d.path <> ${key} limit 1`;
    // A phrase the full-text syntax cannot take (no word tokens) is looked for by reading the chunks.
    const rows = await reader.rows<{ path: string }>(indexed).catch(() => reader.rows<{ path: string }>(scanned));
    return rows.length > 0;
  };
}
