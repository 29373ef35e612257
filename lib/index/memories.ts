import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { and, asc, count, desc, eq, gt, gte, inArray, isNull, lt, or, sql, type SQL } from "drizzle-orm";
import { createTwoFilesPatch } from "diff";
import { z } from "zod";
import { getConfig } from "../config";
import { getGovernance, storeDir, type StoreHandle } from "../db/connection";
import type { PgColumn } from "drizzle-orm/pg-core";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { dialect, engineStep, inCallerTx, insertManyOrIgnore, read, select, sqlRun, tablePair, update, write, type AnyStoreHandle, type On, type Op } from "../db/port";
import { categories, memories, type MemoryRow } from "../db/schema/index";
import * as pgStore from "../db/schema/pg/store";
import { AppError, infrastructureError } from "../errors";
import { ACTIVITY_PAGE_MAX, activityFilterSchema, listActivity, type ActivityEntry } from "../governance/activity";
import { appendAudit, listAuditByTargets, pgLedger, type AuditEntry } from "../governance/audit";
import { pageWithinBudget } from "../governance/limits";
import { log } from "../log";
import { mkdirPrivate, PRIVATE_FILE_MODE } from "../private-fs";
import { existsNoFollow, readFileNoFollow, resolveInside } from "./contained-fs";
import { parseFrontmatter, stringifyFrontmatter } from "./frontmatter";
import { audit } from "./engine-steps";
import { deleteDocumentOp, documentsLeastGrowth, ingestDocumentsOp, type IngestResult } from "./ingest";
import { boolParam, dateParam, tagsParam } from "./query-params";
import { withinStoreQuota } from "./store-quota";
import { listViewQuerySchema, visibleWhere } from "./item-state";
import { stageFile } from "./files-after-commit";
import { memoryStateFromTrashOp, memoryStateToTrashOp, purgeTrashStateOp } from "./memory-trash-state";
import { memoryStateFollowsOp, supersedesSchema } from "./item-state";
import { factPropertySchema, factSubjectSchema, factValueSchema, validFromSchema } from "./facts";

/** A memory lives at memory/<category path>/<slug>.md; its API path is `<category path>/<slug>`. */
/** Names a person would use (`Team Notes`, `v1.2-release`, `Café`): letters, digits, spaces, '.', '_' and '-', starting with a letter or digit, not ending in a space or dot. */
const MEMORY_SEGMENT_RE = /^[\p{L}\p{N}](?:[\p{L}\p{N} ._-]{0,78}[\p{L}\p{N}_-])?$/u;
const MAX_DEPTH = 16;
export const CATEGORY_FILE = "_category.md";

function segmentsOk(p: string, minSegments: number, { lastIsFile }: { lastIsFile: boolean }): string | null {
  if (p.includes("\0")) return "must not contain NUL";
  if (p.startsWith("/") || p.includes("\\") || /^[A-Za-z]:/.test(p)) return "must be a relative path with '/' separators";
  const segs = p.split("/");
  if (segs.length < minSegments || segs.length > MAX_DEPTH + 1) return `must have ${minSegments}-${MAX_DEPTH + 1} segments`;
  if (segs.some((s) => s === ".." || s.includes(".."))) return "must not contain '..'";
  if (!segs.every((s) => MEMORY_SEGMENT_RE.test(s))) return "segments are 1-80 letters, digits, spaces, '.', '_' or '-', starting with a letter or digit and not ending in a space or dot (no hidden names, no '..')";
  // A folder named like a memory's file (<slug>.md) would be both at once on disk.
  const folders = lastIsFile ? segs.slice(0, -1) : segs;
  if (folders.some((s) => /\.md$/i.test(s))) return "category names must not end in '.md' (the name of a memory's file)";
  return null;
}

export const memoryPathSchema = z.string().max(400).superRefine((p, ctx) => {
  const problem = segmentsOk(p, 2, { lastIsFile: true });
  if (problem) ctx.addIssue({ code: "custom", message: `memory path ${problem} (form: <category>/<slug>)` });
});

export const categoryPathSchema = z.string().max(400).superRefine((p, ctx) => {
  const problem = segmentsOk(p, 1, { lastIsFile: false });
  if (problem) ctx.addIssue({ code: "custom", message: `category path ${problem}` });
});

const dateInput = z.union([z.iso.datetime({ offset: true }), z.number().int().nonnegative()]).transform((v) => (typeof v === "number" ? v : Date.parse(v)));
const tagsInput = z
  .array(z.string().trim().min(1).max(64))
  .max(32)
  .transform((t) => [...new Set(t)]);

export const createMemorySchema = z
  .object({
    path: memoryPathSchema,
    body: z.string().max(1024 * 1024),
    tags: tagsInput.optional(),
    summary: z.string().max(1000).optional(),
    source: z.string().max(200).optional(),
    expires_at: dateInput.optional(),
    /** Governed memory: the path of the memory this one replaces (retired, kept, linked). */
    supersedes: supersedesSchema,
    /** Governed memory (lib/index/facts.ts): what the memory is about, which property, and the value it states (default the body); a new value supersedes the old. */
    subject: factSubjectSchema.optional(),
    property: factPropertySchema.optional(),
    value: factValueSchema.optional(),
    /** When it became true (epoch ms; default now). */
    valid_from: validFromSchema.optional(),
  })
  .strict();

export const updateMemorySchema = z
  .object({
    path: memoryPathSchema,
    body: z.string().max(1024 * 1024).optional(),
    tags: tagsInput.optional(),
    summary: z.string().max(1000).nullable().optional(),
    source: z.string().max(200).nullable().optional(),
    expires_at: dateInput.nullable().optional(),
    /** Move the memory (delete + create) to this path. */
    move_to: memoryPathSchema.optional(),
  })
  .strict();

export type Memory = {
  path: string;
  category: string;
  slug: string;
  tags: string[];
  token_estimate: number;
  source: string | null;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  summary: string | null;
};

export type MemoryWithBody = Memory & { body: string };

/** The store's memory/ folder: the memories' source of truth. */
export function memoryDir({ handle }: { handle: StoreHandle }): string {
  return path.join(storeDir(handle.store), "memory");
}

/**
 * The file of a memory, checked on disk: a symbolic link anywhere below the
 * store's memory folder makes it a 422, so no read, write, move or delete
 * ever reaches outside the folder through one.
 */
function memoryFile({ handle, memoryPath }: { handle: StoreHandle; memoryPath: string }): string {
  const segments = memoryPath.split("/");
  segments[segments.length - 1] += ".md";
  return resolveInside({ root: memoryDir({ handle }), segments, what: `memory ${memoryPath}` });
}

function categoryFile({ handle, category }: { handle: StoreHandle; category: string }): string {
  return resolveInside({ root: memoryDir({ handle }), segments: [...category.split("/"), CATEGORY_FILE], what: `category ${category}` });
}

export function memoryDocPath(memoryPath: string): string {
  return `memory/${memoryPath}.md`;
}

/** Write content to a hidden temp file beside `file` (same folder, so a rename is atomic). Nothing is left behind on failure. */
function writeTempBeside(file: string, content: string): string {
  mkdirPrivate(path.dirname(file));
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    // "wx" never follows a link: an existing name (link or not) is an error.
    fs.writeFileSync(tmp, content, { flag: "wx", mode: PRIVATE_FILE_MODE });
    return tmp;
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

/** Write via a hidden temp file in the same folder + rename, so readers see the old or the new file, never half. */
export function writeFileAtomic({ file, content }: { file: string; content: string }): void {
  const tmp = writeTempBeside(file, content);
  try {
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

function dateField(v: unknown): number | null {
  if (typeof v !== "string" || v === "") return null;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : null;
}

function iso(ms: number | null | undefined): string | undefined {
  return ms === null || ms === undefined ? undefined : new Date(ms).toISOString();
}

/** Parse a memory file's text into its index row (dates missing from the frontmatter fall back to the file's mtime). */
export function memoryFromText({ memoryPath, text, mtime }: { memoryPath: string; text: string; mtime: number }): MemoryWithBody {
  const { data, body } = parseFrontmatter(text);
  const str = (k: string) => (typeof data[k] === "string" && data[k] !== "" ? (data[k] as string) : null);
  const tags = Array.isArray(data.tags) ? data.tags : typeof data.tags === "string" && data.tags ? [data.tags] : [];
  const slash = memoryPath.lastIndexOf("/");
  const createdAt = dateField(data.created_at) ?? mtime;
  return {
    path: memoryPath,
    category: memoryPath.slice(0, slash),
    slug: memoryPath.slice(slash + 1),
    tags,
    token_estimate: Math.ceil(body.length / 4),
    source: str("source"),
    created_at: createdAt,
    updated_at: dateField(data.updated_at) ?? createdAt,
    expires_at: dateField(data.expires_at),
    summary: str("summary"),
    body,
  };
}

/**
 * Make sure a category and all its ancestors have rows. `capped` (a memory or
 * category write over the API): one that would take the store past
 * DUALMIND_MAX_CATEGORIES_PER_STORE is refused; files placed by hand are
 * still indexed.
 */
export function* ensureCategoryOp({ category, capped = false }: { category: string; capped?: boolean }): Op<void> {
  const segs = category.split("/");
  const rows = segs.map((_, i) => ({ path: segs.slice(0, i + 1).join("/"), parentPath: i > 0 ? segs.slice(0, i).join("/") : null }));
  if (capped) {
    const paths = rows.map((r) => r.path);
    const present = yield* select(memoryTables, (db, { categories: c }) => db.select({ path: c.path }).from(c).where(inArray(c.path, paths)));
    const adding = paths.length - present.length;
    const max = getConfig().limits.maxCategoriesPerStore;
    if (adding > 0) {
      const [{ n }] = yield* select(memoryTables, (db, { categories: c }) => db.select({ n: count() }).from(c));
      if (Number(n) + adding > max) {
        throw new AppError("unprocessable", `the store holds ${n} categories; ${category} would add ${adding}, past its most of ${max} (limit DUALMIND_MAX_CATEGORIES_PER_STORE): file the memory under an existing category`, [
          { path: "path", message: "too many categories", limit: "DUALMIND_MAX_CATEGORIES_PER_STORE" },
        ]);
      }
    }
  }
  yield* insertManyOrIgnore(memoryTables.categories, rows, (c) => [c.path]);
}

/** Drop `category` and its ancestors where left with no memories (below them too) and no description. */
function* pruneCategoriesOp(category: string): Op<void> {
  const pg = (yield* dialect()) === "pg";
  const segs = category.split("/");
  // Deepest first: a parent is judged after its child is gone.
  for (let i = segs.length; i >= 1; i--) {
    const path = segs.slice(0, i).join("/");
    yield* sqlRun(sql`delete from categories where path = ${path} and description is null and not exists (
      select 1 from memories where ${inCategory({ column: memories.category, category: path, pg })})`);
  }
}

/** Drop every category left with no memories and no description (a reindex): one grouped pass over the memories. */
export function* pruneAllCategoriesOp(): Op<void> {
  const used = new Set<string>();
  const groups = yield* select(memoryTables, (db, { memories: m }) => db.select({ category: m.category }).from(m).groupBy(m.category));
  for (const { category } of groups) {
    const segs = category.split("/");
    for (let i = 1; i <= segs.length; i++) used.add(segs.slice(0, i).join("/"));
  }
  const empty = (yield* select(memoryTables, (db, { categories: c }) => db.select({ path: c.path }).from(c).where(isNull(c.description)))).map((r) => r.path).filter((p) => !used.has(p));
  for (let i = 0; i < empty.length; i += 500) {
    const slice = empty.slice(i, i + 500);
    yield* sqlRun(sql`delete from categories where path in (${sql.join(slice.map((p) => sql`${p}`), sql`, `)})`);
  }
}

/**
 * A memory's row: on SQLite the index of its file (written only when a field
 * changed), on PostgreSQL the truth, with the file's whole text (written only
 * when the text changed).
 */
function upsertMemoryRow(m: MemoryWithBody, text: string): Op<void> {
  const fields = { path: m.path, category: m.category, tokenEstimate: m.token_estimate, source: m.source, createdAt: m.created_at, updatedAt: m.updated_at, expiresAt: m.expires_at, summary: m.summary };
  const { path: _key, ...set } = fields;
  return engineStep({
    sqlite: (h) =>
      void h.db
        .insert(memories)
        .values({ ...fields, tags: JSON.stringify(m.tags) })
        .onConflictDoUpdate({ target: memories.path, set: { ...set, tags: JSON.stringify(m.tags) }, setWhere: sql`(memories.category, memories.tags, memories.token_estimate, memories.source, memories.created_at, memories.updated_at, memories.expires_at, memories.summary) is not
          (excluded.category, excluded.tags, excluded.token_estimate, excluded.source, excluded.created_at, excluded.updated_at, excluded.expires_at, excluded.summary)` })
        .run(),
    pg: async (tx) =>
      void (await tx
        .insert(pgStore.memories)
        .values({ ...fields, tags: m.tags, content: text })
        .onConflictDoUpdate({ target: pgStore.memories.path, set: { ...set, tags: m.tags, content: text }, setWhere: sql`${pgStore.memories.content} is distinct from excluded.content` })),
  });
}

/**
 * Index one memory file's text, in the caller's write: its memories row
 * (fields from the frontmatter; dates missing there fall back to `mtime`),
 * its categories and its document + chunks. Unchanged text writes nothing.
 */
export function* indexMemoryOp({ memoryPath, text, mtime, capped = false }: { memoryPath: string; text: string; mtime: number; capped?: boolean }): Op<IngestResult> {
  const m = memoryFromText({ memoryPath, text, mtime });
  yield* upsertMemoryRow(m, text);
  yield* ensureCategoryOp({ category: m.category, capped });
  // PostgreSQL keeps no file: the document's mtime is the memory's updated_at.
  const docMtime = (yield* dialect()) === "pg" ? m.updated_at : mtime;
  return (yield* ingestDocumentsOp({ docs: [{ path: memoryDocPath(memoryPath), origin: "file", text, mtime: docMtime }] }))[0];
}

/** Drop a memory's rows, and categories left with no memories and no description. */
export function* removeMemoryOp(memoryPath: string): Op<void> {
  yield* sqlRun(sql`delete from memories where path = ${memoryPath}`);
  yield* memoryStateFollowsOp({ from: memoryPath, to: null });
  yield* deleteDocumentOp(memoryDocPath(memoryPath));
  yield* pruneCategoriesOp(memoryPath.slice(0, memoryPath.lastIndexOf("/")));
}

export function renderMemoryFile({ memory: m, body }: { memory: Omit<Memory, "category" | "slug" | "token_estimate">; body: string }): string {
  return stringifyFrontmatter({
    data: {
      tags: m.tags,
      created_at: iso(m.created_at),
      updated_at: iso(m.updated_at),
      expires_at: iso(m.expires_at),
      source: m.source,
      summary: m.summary,
    },
    body,
  });
}

/** An audit target naming one memory of a store. */
export function memoryTarget({ handle, memoryPath }: { handle: { store: string }; memoryPath: string }): string {
  return `store:${handle.store}/memory:${memoryPath}`;
}

/**
 * The transaction of a create, update or restore on either engine: within the store's quotas (a move frees its old
 * path's rows first), the memory indexed at `to` (on PostgreSQL its row is the truth), then its audit row.
 */
export function* memoryWriteOp({ store, write: w, mtime }: { store: string; write: MemoryWrite; mtime: number }): Op<void> {
  const adds = () => documentsLeastGrowth({ docs: [{ path: memoryDocPath(w.to), text: w.text }], freeing: [w.replaces ?? w.to, w.to].map(memoryDocPath) });
  yield* withinStoreQuota({ store, adds, op: (function* () {
    if (w.replaces !== undefined) {
      yield* memoryStateFollowsOp({ from: w.replaces, to: w.to });
      yield* removeMemoryOp(w.replaces);
    }
    yield* indexMemoryOp({ memoryPath: w.to, text: w.text, mtime, capped: true });
    if (w.restoredFrom !== undefined) yield* memoryStateFromTrashOp({ trashId: w.restoredFrom, to: w.to });
  })() });
  // Through the audit step: an agent's write is refused while the ledger is full or its share used up.
  yield* audit(w.audit);
}

/**
 * On SQLite the new text goes to a temp file first (a full disk fails here), then the index commits with its audit
 * row (memoryWriteOp), then the rename makes the file the truth. A failed index write (e.g. SQLITE_FULL) removes the
 * temp file, so the caller's error means nothing was written. Only a failed rename after the commit leaves the index
 * ahead of the file; the error says so and the next reindex repairs it. A move removes the old file once the new one
 * is in place.
 */
function writeMemory({ handle, write: w }: { handle: StoreHandle; write: MemoryWrite }): Memory {
  const { to: memoryPath, replaces } = w;
  const file = memoryFile({ handle, memoryPath });
  const oldFile = replaces === undefined ? null : memoryFile({ handle, memoryPath: replaces });
  const tmp = writeTempBeside(file, w.text);
  try {
    write(handle, memoryWriteOp({ store: handle.store, write: w, mtime: fs.statSync(tmp).mtimeMs }));
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  const place = () => {
    try {
      fs.renameSync(tmp, file);
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      log("error", "memory indexed but its file could not be renamed into place", { store: handle.store, memoryPath, error: String(e) });
      throw new AppError("internal", `memory ${memoryPath} was indexed but its file could not be written; run a reindex of store ${handle.store}`);
    }
    if (oldFile) {
      try {
        fs.rmSync(oldFile);
      } catch (e) {
        log("error", "memory moved but its old file could not be removed", { store: handle.store, from: replaces, to: memoryPath, error: String(e) });
        throw new AppError("internal", `memory moved to ${memoryPath} but ${replaces} could not be removed; delete it or run a reindex of store ${handle.store}`);
      }
    }
  };
  // Inside a transaction that writes more after this (a proposal's state): the file goes in place once it commits.
  if (stageFile({ staged: { place, abandon: () => fs.rmSync(tmp, { force: true }) } })) return memoryFromText({ memoryPath, text: w.text, mtime: fs.statSync(tmp).mtimeMs });
  place();
  return getMemoryByPath({ handle, memoryPath });
}

/** The audit rows keep a body diff up to this size, so the history can show the last edit without the log growing by whole files. */
export const MEMORY_DIFF_MAX_CHARS = 16_000;
/** Past this many changed lines (or this much time) a diff is not computed: the row says the edit was too large to show. */
const DIFF_MAX_EDIT_LENGTH = 1_000;
const DIFF_TIMEOUT_MS = 250;

export type MemoryBodyDiff = { diff: string | null; diffTruncated: boolean };

/** A unified diff of two bodies, bounded in work and size; null when the edit is too large to diff cheaply. */
export function diffMemoryBodies({ before, after, from, to }: { before: string; after: string; from: string; to: string }): MemoryBodyDiff {
  // Bodies are compared as the lines a person reads: a missing final newline is not a change worth a
  // "\ No newline at end of file" marker in the history.
  const asLines = (text: string) => (text === "" || text.endsWith("\n") ? text : `${text}\n`);
  const patch = createTwoFilesPatch(`a/${from}.md`, `b/${to}.md`, asLines(before), asLines(after), undefined, undefined, { context: 3, maxEditLength: DIFF_MAX_EDIT_LENGTH, timeout: DIFF_TIMEOUT_MS });
  if (patch === undefined) return { diff: null, diffTruncated: true };
  // The two header lines (Index and ===) add nothing here.
  const body = patch.split("\n").slice(2).join("\n");
  return body.length > MEMORY_DIFF_MAX_CHARS ? { diff: body.slice(0, body.lastIndexOf("\n", MEMORY_DIFF_MAX_CHARS)), diffTruncated: true } : { diff: body, diffTruncated: false };
}

/** The frontmatter fields an update audit compares: the name the audit row gives each, and the memory's key. */
const FRONTMATTER_FIELDS = [["tags", "tags"], ["summary", "summary"], ["source", "source"], ["expiresAt", "expires_at"]] as const;

/**
 * What a create, update or restore writes (both backends): the file's text at `to`, its audit entry, and for a
 * move the path it leaves (`replaces`). `conflict` is the 409 when another memory holds `to`.
 */
export type MemoryWrite = { to: string; text: string; audit: AuditEntry; replaces?: string; conflict: string; /** A restore: the trash entry whose kept governed state comes back at `to`. */ restoredFrom?: string };

const alreadyExists = (to: string) => `memory ${to} already exists`;

/** A new memory's file: created and updated now. */
export function createWrite({ store, input, actor, now }: { store: string; input: z.output<typeof createMemorySchema>; actor: string; now: number }): MemoryWrite {
  const text = renderMemoryFile({
    memory: { path: input.path, tags: input.tags ?? [], created_at: now, updated_at: now, expires_at: input.expires_at ?? null, source: input.source ?? null, summary: input.summary ?? null },
    body: input.body,
  });
  return { to: input.path, text, audit: { actor, action: "memory.create", target: memoryTarget({ handle: { store }, memoryPath: input.path }) }, conflict: alreadyExists(input.path) };
}

export function createMemory({ handle, input, actor, now = Date.now() }: { handle: StoreHandle; input: z.output<typeof createMemorySchema>; actor: string; now?: number }): Memory {
  const w = createWrite({ store: handle.store, input, actor, now });
  if (existsNoFollow(memoryFile({ handle, memoryPath: w.to }))) throw new AppError("conflict", w.conflict);
  return writeMemory({ handle, write: w });
}

/**
 * An update of `current` (fields the request leaves out keep their value, null clears one; created stays, updated is
 * now), and its move when `move_to` names another path.
 */
export function updateWrite({ store, current, input, actor, now }: { store: string; current: MemoryWithBody; input: z.output<typeof updateMemorySchema>; actor: string; now: number }): MemoryWrite {
  const to = input.move_to ?? input.path;
  const next = {
    path: to,
    tags: input.tags ?? current.tags,
    created_at: current.created_at,
    updated_at: now,
    expires_at: input.expires_at === undefined ? current.expires_at : input.expires_at,
    source: input.source === undefined ? current.source : input.source,
    summary: input.summary === undefined ? current.summary : input.summary,
  };
  const body = input.body ?? current.body;
  const audit: AuditEntry = { actor, ...memoryUpdateAudit({ current, next, body, from: input.path, to }), target: memoryTarget({ handle: { store }, memoryPath: to }) };
  return { to, text: renderMemoryFile({ memory: next, body }), audit, replaces: to !== input.path ? input.path : undefined, conflict: alreadyExists(to) };
}

export function updateMemory({ handle, input, actor, now = Date.now() }: { handle: StoreHandle; input: z.output<typeof updateMemorySchema>; actor: string; now?: number }): Memory {
  const w = updateWrite({ store: handle.store, current: getMemoryByPath({ handle, memoryPath: input.path }), input, actor, now });
  if (w.replaces !== undefined && existsNoFollow(memoryFile({ handle, memoryPath: w.to }))) throw new AppError("conflict", w.conflict);
  return writeMemory({ handle, write: w });
}

/**
 * What an update changed, for the memory's history (both backends): frontmatter fields
 * before → after and a bounded diff of the body; a move that changed nothing else is memory.move.
 */
function memoryUpdateAudit({ current, next, body, from, to }: { current: MemoryWithBody; next: Omit<Memory, "category" | "slug" | "token_estimate">; body: string; from: string; to: string }) {
  const changed: Record<string, { before: unknown; after: unknown }> = {};
  for (const [name, field] of FRONTMATTER_FIELDS) {
    if (JSON.stringify(current[field]) !== JSON.stringify(next[field])) changed[name] = { before: current[field], after: next[field] };
  }
  const moved = to !== from;
  const bodyChanged = body !== current.body;
  const details: Record<string, unknown> = {
    ...(moved ? { movedFrom: from } : {}),
    fields: [...(bodyChanged ? ["body"] : []), ...Object.keys(changed)],
    ...(Object.keys(changed).length > 0 ? { changed } : {}),
    ...(bodyChanged ? diffMemoryBodies({ before: current.body, after: body, from, to }) : {}),
  };
  const action: "memory.move" | "memory.update" = moved && !bodyChanged && Object.keys(changed).length === 0 ? "memory.move" : "memory.update";
  return { action, details };
}

// ---- trash -------------------------------------------------------------------

/**
 * A deleted memory is kept, restorable, for DUALMIND_MEMORY_TRASH_DAYS. On
 * SQLite its file moves to memory/.trash/<id>.md (byte for byte) beside a
 * <id>.json naming its path, who deleted it and when; the folder is hidden, so
 * scans, reindex and verify never see it. On PostgreSQL the memory_trash table
 * holds the same (memories-pg.ts). Expired entries are purged whenever a
 * store's trash is listed or written.
 */
export const MEMORY_TRASH_DIR = ".trash";
/** A trash listing shows at most this many entries, newest first. */
export const MEMORY_TRASH_LIST_MAX = 200;

export type TrashedMemory = {
  id: string;
  /** The path the memory had when it was deleted. */
  path: string;
  deleted_at: number;
  deleted_by: string;
  /** When the purge policy removes it for good. */
  purge_at: number;
  summary: string | null;
  tags: string[];
  token_estimate: number;
};

export type TrashedMemoryWithBody = TrashedMemory & { body: string };

export const trashIdSchema = z.string().regex(/^\d{13}-[0-9a-f]{12}$/, "a trash id looks like 1764345600000-0123456789ab");
export const restoreMemorySchema = z.object({ id: trashIdSchema, to: memoryPathSchema.optional() }).strict();

export const trashRetentionMs = (): number => getConfig().memoryTrashDays * 86_400_000;

export function newTrashId(now: number): string {
  return `${String(now).padStart(13, "0")}-${randomBytes(6).toString("hex")}`;
}

/** A trash entry as the API shows it, from the text it keeps (either backend). */
export function trashedMemoryOf({ id, path: memoryPath, deletedAt, deletedBy, text }: { id: string; path: string; deletedAt: number; deletedBy: string; text: string }): TrashedMemoryWithBody {
  const m = memoryFromText({ memoryPath, text, mtime: deletedAt });
  return { id, path: memoryPath, deleted_at: deletedAt, deleted_by: deletedBy, purge_at: deletedAt + trashRetentionMs(), summary: m.summary, tags: m.tags, token_estimate: m.token_estimate, body: m.body };
}

const trashDir = (handle: StoreHandle) => resolveInside({ root: memoryDir({ handle }), segments: [MEMORY_TRASH_DIR], what: "the memory trash" });
const trashFiles = (handle: StoreHandle, id: string) => ({ text: path.join(trashDir(handle), `${id}.md`), meta: path.join(trashDir(handle), `${id}.json`) });

type TrashMeta = { path: string; deletedAt: number; deletedBy: string };

function readTrashEntry(handle: StoreHandle, id: string): TrashedMemoryWithBody | null {
  const files = trashFiles(handle, id);
  try {
    const meta = JSON.parse(readFileNoFollow({ file: files.meta, what: "trash entry" }).bytes.toString("utf8")) as TrashMeta;
    const text = readFileNoFollow({ file: files.text, what: "trash entry" }).bytes.toString("utf8");
    if (typeof meta.path !== "string" || typeof meta.deletedAt !== "number") return null;
    return trashedMemoryOf({ id, path: meta.path, deletedAt: meta.deletedAt, deletedBy: String(meta.deletedBy ?? "unknown"), text });
  } catch {
    return null;
  }
}

/** The ids of the trash's entries that have a `.json` (or `.md`) file, newest first; null when the store has no trash. */
function trashIds(handle: StoreHandle, ext: "json" | "md"): string[] | null {
  let dir: string;
  try {
    dir = trashDir(handle);
  } catch {
    return null;
  }
  if (!fs.existsSync(dir)) return null;
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith(`.${ext}`))
    .map((name) => name.slice(0, -ext.length - 1))
    .filter((id) => trashIdSchema.safeParse(id).success)
    .sort()
    .reverse();
}

/** Remove trash entries older than the retention (and halves left by an interrupted delete); answers how many went. */
export function purgeMemoryTrash({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): number {
  // A store opened for reading keeps its trash as it is (its entries and their kept state): purged once writable.
  if (handle.readOnly) return 0;
  const ids = trashIds(handle, "json");
  if (ids === null) return 0;
  const cutoff = now - trashRetentionMs();
  const expired = ids.filter((id) => Number(id.slice(0, 13)) <= cutoff);
  // The state the entries kept goes first: a store that cannot be written keeps its entries whole, to purge later.
  if (expired.length > 0) write(handle, purgeTrashStateOp({ trashIds: expired }));
  for (const id of expired) {
    const files = trashFiles(handle, id);
    fs.rmSync(files.text, { force: true });
    fs.rmSync(files.meta, { force: true });
  }
  return expired.length + purgeTrashPastBytes(handle);
}

/** Past DUALMIND_MEMORY_TRASH_MAX_BYTES or DUALMIND_MEMORY_TRASH_MAX_ENTRIES the oldest entries go first, each audited as memory.purge. */
function purgeTrashPastBytes(handle: StoreHandle): number {
  const max = getConfig().limits.memoryTrashMaxBytes;
  const maxEntries = getConfig().limits.memoryTrashMaxEntries;
  const ids = trashIds(handle, "md") ?? [];
  let kept = 0;
  let purged = 0;
  for (const [nth, id] of ids.entries()) {
    const files = trashFiles(handle, id);
    // Past the entry count no size is read: the entries beyond it go whatever their size.
    if (nth < maxEntries) kept += fs.statSync(files.text, { throwIfNoEntry: false })?.size ?? 0;
    if (kept <= max && nth < maxEntries) continue;
    const entry = readTrashEntry(handle, id);
    write(handle, purgeTrashStateOp({ trashIds: [id] }));
    fs.rmSync(files.text, { force: true });
    fs.rmSync(files.meta, { force: true });
    appendAudit({ actor: "system", action: "memory.purge", target: memoryTarget({ handle, memoryPath: entry?.path ?? id }), details: { trashId: id, limit: nth >= maxEntries ? "DUALMIND_MEMORY_TRASH_MAX_ENTRIES" : "DUALMIND_MEMORY_TRASH_MAX_BYTES" } });
    purged++;
  }
  return purged;
}

/** The store's trash, newest first (expired entries purged first). */
export function listMemoryTrash({ handle, now = Date.now() }: { handle: StoreHandle; now?: number }): TrashedMemory[] {
  purgeMemoryTrash({ handle, now });
  const ids = (trashIds(handle, "json") ?? []).slice(0, MEMORY_TRASH_LIST_MAX);
  return ids.map((id) => readTrashEntry(handle, id)).filter((e): e is TrashedMemoryWithBody => e !== null).map(({ body: _body, ...e }) => e);
}

export function getTrashedMemory({ handle, id, now = Date.now() }: { handle: StoreHandle; id: string; now?: number }): TrashedMemoryWithBody {
  const entry = trashIdSchema.safeParse(id).success ? readTrashEntry(handle, id) : null;
  if (!entry || entry.purge_at <= now) throw noTrashEntry({ store: handle.store, id });
  return entry;
}

/**
 * Put a deleted memory back, at its old path or at `to`, byte for byte: the
 * same write as a create (file, index, audit row memory.restore in one
 * transaction), then its trash entry goes. A memory already at that path is a
 * 409 naming it (restore to another path, or move that one first).
 */
export function restoreMemory({ handle, input, actor }: { handle: StoreHandle; input: z.output<typeof restoreMemorySchema>; actor: string }): Memory {
  const entry = getTrashedMemory({ handle, id: input.id });
  const files = trashFiles(handle, input.id);
  const w = restoreWrite({ store: handle.store, entry, text: readFileNoFollow({ file: files.text, what: "trash entry" }).bytes.toString("utf8"), input, actor });
  if (existsNoFollow(memoryFile({ handle, memoryPath: w.to }))) throw new AppError("conflict", w.conflict);
  const memory = writeMemory({ handle, write: w });
  fs.rmSync(files.text, { force: true });
  fs.rmSync(files.meta, { force: true });
  return memory;
}

/** A restore (both backends): the trash entry's text byte for byte, its audit naming the entry and, restored elsewhere, where it was. */
export function restoreWrite({ store, entry, text, input, actor }: { store: string; entry: TrashedMemory; text: string; input: z.output<typeof restoreMemorySchema>; actor: string }): MemoryWrite {
  const to = input.to ?? entry.path;
  const details = { trashId: entry.id, deletedAt: entry.deleted_at, ...(to !== entry.path ? { movedFrom: entry.path } : {}) };
  return { to, text, audit: { actor, action: "memory.restore", target: memoryTarget({ handle: { store }, memoryPath: to }), details }, conflict: `${alreadyExists(to)}: restore the deleted one to another path, or move that one first`, restoredFrom: entry.id };
}

/** The 404 of a trash id the store does not hold (either backend). */
export const noTrashEntry = ({ store, id }: { store: string; id: string }) => new AppError("not_found", `no deleted memory ${id} in the trash of store ${store}`);

/** Delete a trash entry for good before the policy would (a secret written by mistake); audited as memory.purge. */
export function purgeTrashedMemory({ handle, id, actor }: { handle: StoreHandle; id: string; actor: string }): void {
  const entry = getTrashedMemory({ handle, id });
  const files = trashFiles(handle, id);
  // The state the entry kept and the audit row commit together, then its files go: a failed commit keeps the entry whole.
  handle.sqlite
    .transaction(() => {
      write(handle, purgeTrashStateOp({ trashIds: [id] }));
      inCallerTx(handle, audit({ actor, action: "memory.purge", target: memoryTarget({ handle, memoryPath: entry.path }), details: { trashId: id } }));
    })
    .immediate();
  fs.rmSync(files.text, { force: true });
  fs.rmSync(files.meta, { force: true });
}

/**
 * Both or neither: the file moves into the trash (a rename within the memory
 * folder: no space needed; the trash is hidden, so scans skip it), then the
 * index rows and the audit row commit in one transaction. A failed commit (a
 * full disk, a read-only index) moves the file back: the memory is still
 * there, in the folder and in search, and the answer is a 503 naming why.
 * With a retention of 0 days the trashed file is removed at once.
 */
export function deleteMemory({ handle, memoryPath, actor, now = Date.now() }: { handle: StoreHandle; memoryPath: string; actor: string; now?: number }): void {
  const file = memoryFile({ handle, memoryPath });
  if (!existsNoFollow(file)) throw new AppError("not_found", `no memory ${memoryPath}`);
  purgeMemoryTrash({ handle, now });
  const id = newTrashId(now);
  const trash = trashFiles(handle, id);
  try {
    mkdirPrivate(path.dirname(trash.text));
    fs.writeFileSync(trash.meta, JSON.stringify({ path: memoryPath, deletedAt: now, deletedBy: actor } satisfies TrashMeta), { flag: "wx", mode: PRIVATE_FILE_MODE });
    fs.renameSync(file, trash.text);
  } catch (e) {
    fs.rmSync(trash.meta, { force: true });
    const why = infrastructureError(e)?.message ?? `its file could not be moved to the trash: ${(e as NodeJS.ErrnoException).code ?? String(e)}`;
    throw new AppError("unavailable", `memory ${memoryPath} could not be deleted (${why}); nothing was changed`);
  }
  try {
    handle.sqlite
      .transaction(() => {
        if (trashRetentionMs() > 0) write(handle, memoryStateToTrashOp({ memoryPath, trashId: id }));
        write(handle, removeMemoryOp(memoryPath));
        inCallerTx(handle, audit({ actor, action: "memory.delete", target: memoryTarget({ handle, memoryPath }), details: { trashId: id } }));
      })
      .immediate();
  } catch (e) {
    const why = infrastructureError(e)?.message ?? "the index could not be updated";
    try {
      fs.renameSync(trash.text, file);
      fs.rmSync(trash.meta, { force: true });
    } catch (back) {
      log("error", "memory delete failed and its file could not be put back", { store: handle.store, memoryPath, trash: trash.text, error: String(back) });
      throw new AppError("unavailable", `memory ${memoryPath} could not be deleted: ${why}; its file is kept in the trash as ${MEMORY_TRASH_DIR}/${id}.md, restore it from there`);
    }
    log("warn", "memory delete failed; the memory is kept", { store: handle.store, memoryPath, error: String(e) });
    throw new AppError("unavailable", `memory ${memoryPath} could not be deleted: ${why}; nothing was changed, retry when the store can be written`);
  }
  if (trashRetentionMs() === 0) purgeMemoryTrash({ handle, now });
}

export type MemoryHistoryEntry = {
  id: number;
  ts: number;
  actor: string;
  action: "memory.create" | "memory.update" | "memory.move" | "memory.delete" | "memory.restore" | "memory.purge";
  /** The path the memory had after this change. */
  path: string;
  movedFrom: string | null;
  fields: string[];
  changed: Record<string, { before: unknown; after: unknown }>;
  diff: string | null;
  diffTruncated: boolean;
};

const MEMORY_ACTIONS = new Set(["memory.create", "memory.update", "memory.move", "memory.delete", "memory.restore", "memory.purge"]);
/** Moves followed back through earlier paths: a memory moved more often than this shows its newest paths' history only. */
const HISTORY_MAX_PATHS = 10;

function historyEntry(row: AuditHistoryRow, prefix: string): MemoryHistoryEntry | null {
  if (!MEMORY_ACTIONS.has(row.action) || !row.target?.startsWith(prefix)) return null;
  let d: Record<string, unknown> = {};
  try {
    d = row.details ? (JSON.parse(row.details) as Record<string, unknown>) : {};
  } catch {
    // An unreadable details column still shows who did what and when.
  }
  return {
    id: row.id,
    ts: row.ts,
    actor: row.actor,
    action: row.action as MemoryHistoryEntry["action"],
    path: row.target.slice(prefix.length),
    movedFrom: typeof d.movedFrom === "string" ? d.movedFrom : null,
    fields: Array.isArray(d.fields) ? d.fields.filter((f): f is string => typeof f === "string") : [],
    changed: d.changed && typeof d.changed === "object" ? (d.changed as MemoryHistoryEntry["changed"]) : {},
    diff: typeof d.diff === "string" ? d.diff : null,
    diffTruncated: d.diffTruncated === true,
  };
}

/**
 * A memory's change history from the audit log, newest first: who, when,
 * what changed, and the body diff each edit kept. Moves are followed back,
 * so a memory's history includes what happened under its earlier paths
 * (rows there from before it moved in are left out: another memory may have
 * had that path since).
 */
export async function listMemoryHistory({ handle, memoryPath, limit = 50 }: { handle: AnyStoreHandle; memoryPath: string; limit?: number }): Promise<MemoryHistoryEntry[]> {
  const ledger = handle.kind === "pg" ? pgLedger(handle.db) : getGovernance();
  const prefix = memoryTarget({ handle, memoryPath: "" });
  const out: MemoryHistoryEntry[] = [];
  const seen = new Set<string>();
  let before = Number.POSITIVE_INFINITY;
  // A restore (or a purge) is the end of a delete: the history goes on through that delete to the memory before it.
  let throughDelete = false;
  for (let cursor: string | null = memoryPath; cursor !== null && !seen.has(cursor) && seen.size < HISTORY_MAX_PATHS && out.length < limit; ) {
    seen.add(cursor);
    const cutoff = before;
    const rows: MemoryHistoryEntry[] = (await listAuditByTargets({ handle: ledger, targets: [`${prefix}${cursor}`], limit: limit * 2 }))
      .filter((r) => r.id < cutoff)
      .map((r) => historyEntry(r, prefix))
      .filter((e): e is MemoryHistoryEntry => e !== null);
    cursor = null;
    for (const e of rows) {
      // Under this path, history stops at the delete that ended an earlier memory of the same name.
      if (e.action === "memory.delete" && out.length > 0 && !throughDelete) break;
      throughDelete = e.action === "memory.restore" || e.action === "memory.purge";
      out.push(e);
      if (e.movedFrom) {
        cursor = e.movedFrom;
        before = e.id;
        break;
      }
      if (e.action === "memory.create") break;
    }
  }
  return out.slice(0, limit);
}

type AuditHistoryRow = { id: number; ts: number; actor: string; action: string; target: string | null; details: string | null };

/**
 * Memory events read to follow a moved memory: its newest ones only (older moves are not followed), found within
 * the newest MOVE_LOOKUP_WINDOWS scan windows of the audit log and one query budget for the whole lookup, so a 404
 * on a long log costs what one bounded search costs, whoever asks.
 */
const MOVE_LOOKUP_EVENTS = 1_000;
const MOVE_LOOKUP_WINDOWS = 4;

export type MemoryRedirect = { path: string; movedAt: number; actor: string };

/**
 * Where the memory that last lived at `memoryPath` went, when it was moved
 * away (and maybe on): read from the store's memory events in the audit log,
 * oldest to newest, following each move out of the path it had. A new memory
 * created or restored at `memoryPath` since ends the trail (null), as does a
 * path that never held a moved memory. Both backends (listActivity).
 */
export async function findMemoryRedirect({ store, memoryPath }: { store: string; memoryPath: string }): Promise<MemoryRedirect | null> {
  const prefix = `store:${store}/memory:`;
  const events: ActivityEntry[] = [];
  let before: number | undefined;
  const deadline = Date.now() + getConfig().queryBudgetMs;
  for (let windows = 0; events.length < MOVE_LOOKUP_EVENTS; ) {
    const budgetMs = deadline - Date.now();
    if (budgetMs < 10) break;
    let page;
    try {
      page = await listActivity({ filter: activityFilterSchema.parse({ store, action: "memory.", limit: ACTIVITY_PAGE_MAX, before }), budgetMs });
    } catch (e) {
      // Out of budget: the trail is followed as far as it was read (a redirect is a courtesy of the 404).
      if (e instanceof AppError && e.code === "query_too_expensive") break;
      throw e;
    }
    events.push(...page.entries);
    if (page.next_cursor === null) break;
    // A page cut short by its scan window (fewer rows than asked) moved one window back.
    if (page.entries.length < ACTIVITY_PAGE_MAX && ++windows >= MOVE_LOOKUP_WINDOWS) break;
    before = page.next_cursor;
  }
  let current = memoryPath;
  let last: MemoryRedirect | null = null;
  for (const e of events.reverse()) {
    if (!e.target?.startsWith(prefix)) continue;
    const at = e.target.slice(prefix.length);
    const movedFrom = e.details && typeof e.details === "object" && typeof (e.details as { movedFrom?: unknown }).movedFrom === "string" ? (e.details as { movedFrom: string }).movedFrom : null;
    if (movedFrom !== null && movedFrom === current) {
      current = at;
      last = { path: at, movedAt: e.ts, actor: e.actor };
    } else if (at === memoryPath && current !== memoryPath && (e.action === "memory.create" || e.action === "memory.restore")) {
      current = memoryPath;
      last = null;
    }
  }
  return current === memoryPath ? null : last;
}

/** The memory as its file says now (the file is the source of truth). */
export function getMemoryByPath({ handle, memoryPath }: { handle: StoreHandle; memoryPath: string }): MemoryWithBody {
  const file = memoryFile({ handle, memoryPath });
  let read: { bytes: Buffer; mtimeMs: number };
  try {
    read = readFileNoFollow({ file, what: `memory ${memoryPath}` });
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError("not_found", `no memory ${memoryPath}`);
  }
  return memoryFromText({ memoryPath, text: read.bytes.toString("utf8"), mtime: read.mtimeMs });
}

// ---- queries -----------------------------------------------------------------

export const memoryFilterSchema = z
  .object({
    category: categoryPathSchema.optional(),
    tags: tagsParam.optional(),
    updated_after: dateParam.optional(),
    updated_before: dateParam.optional(),
    source: z.string().max(200).optional(),
    sort: z.enum(["updated_at", "created_at", "token_estimate"]).default("updated_at").transform((s) => ({ updated_at: "updatedAt", created_at: "createdAt", token_estimate: "tokenEstimate" } as const)[s]),
    order: z.enum(["asc", "desc"]).default("desc"),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
    include_expired: boolParam.default(false),
    ...listViewQuerySchema,
  })
  .strict();

export type MemoryFilter = z.output<typeof memoryFilterSchema>;

/** The memory index's tables in both schemas: listings read them through the port (lib/db/port.ts) on either engine. */
const memoryTables = { memories: tablePair(memories, pgStore.memories), categories: tablePair(categories, pgStore.categories) };

/** A memories row as the API shows it, on either backend (SQLite keeps tags as JSON text, PostgreSQL as text[]). */
export function memoryOfRow(r: Omit<MemoryRow, "tags"> & { tags: string | string[] }): Memory {
  return {
    path: r.path,
    category: r.category,
    slug: r.path.slice(r.path.lastIndexOf("/") + 1),
    tags: typeof r.tags === "string" ? (JSON.parse(r.tags) as string[]) : r.tags,
    token_estimate: r.tokenEstimate,
    source: r.source,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    expires_at: r.expiresAt,
    summary: r.summary,
  };
}

/** Memories by category (recursive), tags (any), updated range, source; expired left out unless asked. The page and its total are one state. */
export function listMemoriesByFilter<H extends AnyStoreHandle>({ handle, filter, now = Date.now() }: { handle: H; filter: MemoryFilter; now?: number }): On<H, { total: number; memories: Memory[] }> {
  return read(
    handle,
    (function* () {
      // Tags are JSON text on SQLite and text[] on PostgreSQL: the one clause that differs.
      const anyTag =
        filter.tags && filter.tags.length > 0
          ? (yield* dialect()) === "sqlite"
            ? (tags: SQLiteColumn | PgColumn) => sql`exists (select 1 from json_each(${tags}) t where t.value in ${filter.tags})`
            : (tags: SQLiteColumn | PgColumn) => sql`${tags} && array[${sql.join(filter.tags!.map((t) => sql`${t}`), sql`, `)}]::text[]`
          : null;
      const pg = (yield* dialect()) === "pg";
      const clause = (m: typeof memories) =>
        and(
          // The category itself or anything below it (a range, not LIKE: `_` in a path is literal).
          filter.category ? inCategory({ column: m.category, category: filter.category, pg }) : undefined,
          anyTag?.(m.tags),
          filter.updated_after === undefined ? undefined : gte(m.updatedAt, filter.updated_after),
          filter.updated_before === undefined ? undefined : lt(m.updatedAt, filter.updated_before),
          filter.source === undefined ? undefined : eq(m.source, filter.source),
          filter.include_expired ? undefined : or(isNull(m.expiresAt), gt(m.expiresAt, now)),
          visibleWhere({ kind: "memory", id: m.path, includeRetired: filter.include_retired, includeProposed: filter.include_proposed }),
        );
      const [{ n }] = yield* select(memoryTables, (db, t) => db.select({ n: count() }).from(t.memories).where(clause(t.memories)));
      const rows = yield* select(memoryTables, (db, { memories: m }) => {
        const sortColumn = { updatedAt: m.updatedAt, createdAt: m.createdAt, tokenEstimate: m.tokenEstimate }[filter.sort];
        return db
          .select()
          .from(m)
          .where(clause(m))
          .orderBy(filter.order === "asc" ? asc(sortColumn) : desc(sortColumn), asc(m.path))
          .limit(filter.limit)
          .offset(filter.offset);
      });
      return { total: n, memories: rows.map(memoryOfRow) };
    })(),
    { snapshot: true },
  );
}

export type CategoryChild = { path: string; name: string; description: string | null; memories: number; children: number };

/** At most this many categories in one page of a listing. */
export const CATEGORY_PAGE_MAX = 500;
export const categoryPageSchema = z.object({
  limit: z.coerce.number().int().min(1).max(CATEGORY_PAGE_MAX).default(200),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});
export type CategoryPage = { categories: CategoryChild[]; total: number };

/**
 * Rows in category `category` or below it: the category itself, or the range
 * of paths under it (`c/` ≤ x < `c0`: `0` follows `/` byte by byte), which
 * the category index answers; compared byte-wise on PostgreSQL too.
 */
function inCategory({ column, category, pg }: { column: SQLiteColumn | PgColumn; category: string; pg: boolean }): SQL {
  const bytes = (x: SQL | SQLiteColumn | PgColumn) => (pg ? sql`${x} collate "C"` : sql`${x}`);
  return sql`(${column} = ${category} or (${bytes(column)} >= ${bytes(sql`${category + "/"}`)} and ${bytes(column)} < ${bytes(sql`${category + "0"}`)}))`;
}

/**
 * Recursive memory counts (expired ones included) of `paths`, in one grouped
 * pass over the memories under `within` (all when null): each category's rows
 * are added to those of its listed ancestors.
 */
function* memoryCountsOp({ paths, within }: { paths: string[]; within: string | null }): Op<Map<string, number>> {
  const counts = new Map(paths.map((p) => [p, 0]));
  if (paths.length === 0) return counts;
  const pg = (yield* dialect()) === "pg";
  const groups = yield* select(memoryTables, (db, { memories: m }) =>
    db
      .select({ category: m.category, n: count() })
      .from(m)
      .where(within === null ? undefined : inCategory({ column: m.category, category: within, pg }))
      .groupBy(m.category),
  );
  for (const g of groups) {
    const segs = g.category.split("/");
    for (let i = 1; i <= segs.length; i++) {
      const ancestor = segs.slice(0, i).join("/");
      const n = counts.get(ancestor);
      if (n !== undefined) counts.set(ancestor, n + Number(g.n));
    }
  }
  return counts;
}

/** A page of categories (the children of `parent`, root when null, or all when undefined) with recursive memory and child counts. */
function* categoriesPageOp({ parent, limit, offset, only }: { parent: string | null | undefined; limit: number; offset: number; only?: string }): Op<CategoryPage> {
  const where = (c: typeof categories) =>
    only !== undefined ? eq(c.path, only) : parent === undefined ? undefined : parent === null ? isNull(c.parentPath) : eq(c.parentPath, parent);
  const [{ n: total }] = yield* select(memoryTables, (db, { categories: c }) => db.select({ n: count() }).from(c).where(where(c)));
  const rows = yield* select(memoryTables, (db, { categories: c }) =>
    db.select({ path: c.path, description: c.description }).from(c).where(where(c)).orderBy(asc(c.path)).limit(limit).offset(offset),
  );
  const paths = rows.map((r) => r.path);
  const memoryCounts = yield* memoryCountsOp({ paths, within: only ?? parent ?? null });
  const childCounts =
    paths.length === 0
      ? []
      : yield* select(memoryTables, (db, { categories: c }) => db.select({ parent: c.parentPath, n: count() }).from(c).where(inArray(c.parentPath, paths)).groupBy(c.parentPath));
  const children = new Map(childCounts.map((g) => [g.parent, Number(g.n)]));
  const listed = rows.map((r) => ({ path: r.path, name: r.path.slice(r.path.lastIndexOf("/") + 1), description: r.description, memories: memoryCounts.get(r.path) ?? 0, children: children.get(r.path) ?? 0 }));
  return { categories: listed, total: Number(total) };
}

/** A page of the children of `parent` (root when null), within DUALMIND_LIST_MAX_BYTES, with `next_offset` to continue. */
export async function listCategoryChildren({ handle, parent, limit, offset }: { handle: AnyStoreHandle; parent: string | null; limit: number; offset: number }): Promise<CategoryPage & { next_offset: number | null }> {
  return pageWithinBudget({ page: await read(handle, categoriesPageOp({ parent, limit, offset }), { snapshot: true }), key: "categories", offset });
}

/** A page of all categories in path order (the dashboard's tree). */
export function listAllCategories<H extends AnyStoreHandle>({ handle, limit, offset = 0 }: { handle: H; limit: number; offset?: number }): On<H, CategoryPage> {
  return read(handle, categoriesPageOp({ parent: undefined, limit, offset }), { snapshot: true });
}

/** One category with its counts, or null when it has no row. */
export function getCategory<H extends AnyStoreHandle>({ handle, path: category }: { handle: H; path: string }): On<H, CategoryChild | null> {
  return read(handle, function* () {
    return (yield* categoriesPageOp({ parent: undefined, limit: 1, offset: 0, only: category })).categories[0] ?? null;
  }, { snapshot: true });
}

export const setCategorySchema = z.object({ path: categoryPathSchema, description: z.string().trim().max(2000) }).strict();

/**
 * Describe a category. The description lives in memory/<category>/_category.md
 * (file first, like memories), then in the categories row; an empty
 * description removes the file.
 */
export function setCategoryDescription({ handle, input, actor }: { handle: StoreHandle; input: z.output<typeof setCategorySchema>; actor: string }): CategoryChild {
  const file = categoryFile({ handle, category: input.path });
  const before = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
  if (input.description === "") fs.rmSync(file, { force: true });
  else writeFileAtomic({ file, content: input.description + "\n" });
  try {
    write(handle, describeCategoryOp({ store: handle.store, input, actor }));
  } catch (e) {
    // Refused (the store's byte quota) or failed: the file says what the index says.
    if (before === null) fs.rmSync(file, { force: true });
    else writeFileAtomic({ file, content: before });
    throw e;
  }
  return describedCategory({ handle, path: input.path });
}

/** A category's description in its row, audited (SQLite writes its _category.md first; on PostgreSQL the row is the truth). */
export function* describeCategoryOp({ store, input, actor }: { store: string; input: z.output<typeof setCategorySchema>; actor: string }): Op<void> {
  yield* ensureCategoryOp({ category: input.path, capped: input.description !== "" });
  yield* update(memoryTables.categories, { description: input.description || null }, (c) => eq(c.path, input.path));
  yield* pruneCategoriesOp(input.path);
  yield* audit({ actor, action: "category.describe", target: `store:${store}/category:${input.path}`, details: { cleared: input.description === "" } });
}

/** A category as the listing shows it after a describe (an empty one pruned: no memories, no description). */
export function describedCategory<H extends AnyStoreHandle>({ handle, path: category }: { handle: H; path: string }): On<H, CategoryChild> {
  return read(handle, function* () {
    const [found] = (yield* categoriesPageOp({ parent: undefined, limit: 1, offset: 0, only: category })).categories;
    return found ?? { path: category, name: category.slice(category.lastIndexOf("/") + 1), description: null, memories: 0, children: 0 };
  }, { snapshot: true });
}
